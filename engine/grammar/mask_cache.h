#pragma once
// Token masks by parser state, so that a state met again (every byte inside a JSON
// string leads back to the same one) costs a copy instead of a trie walk. Bounded in
// bytes; when full, the least recently used quarter is dropped (recency is
// approximate: an entry remembers the insertion count at its last read).
//
// Thread-safe: reads share a lock, so the hit path costs a lookup and a copy.
#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>

namespace sluice::grammar {

class MaskCache {
 public:
  MaskCache(size_t words_per_mask, size_t max_bytes);

  // Copies the mask of `state` to out[0 .. words_per_mask) and returns true when cached.
  bool copy_to(uint32_t state, uint64_t* out) const;
  void insert(uint32_t state, const uint64_t* mask);
  size_t size() const;

 private:
  struct Entry {
    std::unique_ptr<uint64_t[]> words;
    mutable std::atomic<uint64_t> last_used;
  };
  void drop_oldest();  // under the exclusive lock

  size_t words_;
  size_t max_entries_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<uint32_t, std::unique_ptr<Entry>> entries_;
  std::atomic<uint64_t> clock_{0};
};

}  // namespace sluice::grammar
