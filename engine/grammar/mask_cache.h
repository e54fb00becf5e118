#pragma once
// Token masks by parser state, so that a state met again (every byte inside a JSON
// string leads back to the same one) costs a copy instead of a trie walk. An entry
// may carry a list of trie nodes (a relative state's exit points). Bounded in bytes;
// when full, the least recently used quarter is dropped (recency is approximate: an
// entry remembers the insertion count at its last read).
//
// Thread-safe: reads share a lock, so the hit path costs a lookup and a copy.
#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace sluice::grammar {

class MaskCache {
 public:
  MaskCache(size_t words_per_mask, size_t max_bytes);

  // Copies the mask of `state` to out[0 .. words_per_mask), and its nodes to `nodes`
  // when given; false when not cached.
  bool copy_to(uint32_t state, uint64_t* out, std::vector<uint32_t>* nodes = nullptr) const;
  void insert(uint32_t state, const uint64_t* mask, std::vector<uint32_t> nodes = {});
  size_t size() const;

 private:
  struct Entry {
    std::unique_ptr<uint64_t[]> words;
    std::vector<uint32_t> nodes;
    mutable std::atomic<uint64_t> last_used;
    size_t bytes() const;
  };
  void drop_oldest();  // under the exclusive lock

  size_t words_;
  size_t max_bytes_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<uint32_t, std::unique_ptr<Entry>> entries_;
  size_t bytes_ = 0;
  std::atomic<uint64_t> clock_{0};
};

}  // namespace sluice::grammar
