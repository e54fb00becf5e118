#pragma once
// An open-addressing hash index of ids: the interning tables of the pushdown automaton
// (stack nodes, parser states) keep their entries in their own arrays and use this to
// find an entry's id by content. The caller supplies the hash, the comparison and how
// to add a new entry, so one index serves any entry type without storing keys twice.
// Not thread-safe.
#include <cstdint>
#include <vector>

namespace sluice::grammar {

inline uint64_t mix_hash(uint64_t x) {  // splitmix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class IdIndex {
 public:
  // The id whose entry `is_entry` accepts, or make()'s new id, filed under `hash`.
  // hash_of(id) rehashes existing ids when the index grows.
  template <class IsEntry, class Make, class HashOf>
  uint32_t find_or_insert(uint64_t hash, IsEntry is_entry, Make make, HashOf hash_of) {
    if ((count_ + 1) * 2 > slots_.size()) grow(hash_of);
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const uint32_t id = slots_[i];
      if (id == kEmpty) {
        const uint32_t made = make();
        slots_[i] = made;
        ++count_;
        return made;
      }
      if (is_entry(id)) return id;
    }
  }

  size_t size() const { return count_; }
  size_t memory_bytes() const { return slots_.capacity() * sizeof(uint32_t); }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;

  template <class HashOf>
  void grow(HashOf hash_of) {
    std::vector<uint32_t> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, kEmpty);
    const size_t mask = slots_.size() - 1;
    for (uint32_t id : old) {
      if (id == kEmpty) continue;
      size_t i = hash_of(id) & mask;
      while (slots_[i] != kEmpty) i = (i + 1) & mask;
      slots_[i] = id;
    }
  }

  std::vector<uint32_t> slots_;
  size_t count_ = 0;
};

}  // namespace sluice::grammar
