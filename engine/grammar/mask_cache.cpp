// MaskCache: a shared-lock lookup and an approximate-LRU eviction by bytes.
#include "engine/grammar/mask_cache.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <utility>

namespace sluice::grammar {

size_t MaskCache::Entry::bytes() const {
  return sizeof(Entry) + 64 + nodes.capacity() * sizeof(uint32_t);  // + 64: the map's node, roughly
}

MaskCache::MaskCache(size_t words_per_mask, size_t max_bytes) : words_(words_per_mask), max_bytes_(max_bytes) {}

bool MaskCache::copy_to(uint32_t state, uint64_t* out, std::vector<uint32_t>* nodes) const {
  std::shared_lock lock(mutex_);
  auto it = entries_.find(state);
  if (it == entries_.end()) return false;
  it->second->last_used.store(clock_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  std::memcpy(out, it->second->words.get(), words_ * sizeof(uint64_t));
  if (nodes != nullptr) *nodes = it->second->nodes;
  return true;
}

void MaskCache::insert(uint32_t state, const uint64_t* mask, std::vector<uint32_t> nodes) {
  auto entry = std::make_unique<Entry>();
  entry->words = std::make_unique<uint64_t[]>(words_);
  std::memcpy(entry->words.get(), mask, words_ * sizeof(uint64_t));
  nodes.shrink_to_fit();
  entry->nodes = std::move(nodes);
  const size_t bytes = entry->bytes() + words_ * sizeof(uint64_t);
  std::unique_lock lock(mutex_);
  if (entries_.contains(state)) return;  // another thread computed it meanwhile
  while (!entries_.empty() && bytes_ + bytes > max_bytes_) drop_oldest();
  entry->last_used.store(clock_.fetch_add(1, std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  entries_.emplace(state, std::move(entry));
  bytes_ += bytes;
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
  for (size_t i = 0; i < num_drop; ++i) {
    auto it = entries_.find(ages[i].second);
    bytes_ -= it->second->bytes() + words_ * sizeof(uint64_t);
    entries_.erase(it);
  }
}

}  // namespace sluice::grammar
