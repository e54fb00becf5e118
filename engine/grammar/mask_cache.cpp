// MaskCache: a shared-lock lookup and an approximate-LRU eviction.
#include "engine/grammar/mask_cache.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace sluice::grammar {

MaskCache::MaskCache(size_t words_per_mask, size_t max_bytes)
    : words_(words_per_mask), max_entries_(std::max<size_t>(4, max_bytes / std::max<size_t>(1, words_per_mask * 8))) {}

bool MaskCache::copy_to(uint32_t state, uint64_t* out) const {
  std::shared_lock lock(mutex_);
  auto it = entries_.find(state);
  if (it == entries_.end()) return false;
  it->second->last_used.store(clock_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  std::memcpy(out, it->second->words.get(), words_ * sizeof(uint64_t));
  return true;
}

void MaskCache::insert(uint32_t state, const uint64_t* mask) {
  auto entry = std::make_unique<Entry>();
  entry->words = std::make_unique<uint64_t[]>(words_);
  std::memcpy(entry->words.get(), mask, words_ * sizeof(uint64_t));
  std::unique_lock lock(mutex_);
  if (entries_.contains(state)) return;  // another thread computed it meanwhile
  if (entries_.size() >= max_entries_) drop_oldest();
  entry->last_used.store(clock_.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  entries_.emplace(state, std::move(entry));
}

size_t MaskCache::size() const {
  std::shared_lock lock(mutex_);
  return entries_.size();
}

void MaskCache::drop_oldest() {
  std::vector<std::pair<uint64_t, uint32_t>> ages;
  ages.reserve(entries_.size());
  for (const auto& [state, entry] : entries_) ages.emplace_back(entry->last_used.load(std::memory_order_relaxed), state);
  const size_t num_drop = std::max<size_t>(1, ages.size() / 4);
  std::nth_element(ages.begin(), ages.begin() + static_cast<std::ptrdiff_t>(num_drop - 1), ages.end());
  for (size_t i = 0; i < num_drop; ++i) entries_.erase(ages[i].second);
}

}  // namespace sluice::grammar
