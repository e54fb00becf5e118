#pragma once
// What a CompiledGrammar holds: the grammar, the token table, the pushdown automaton
// its matchers share (behind a shared mutex: rows are read under a shared lock and
// computed under the exclusive one), the mask caches and the statistics.
// Thread-safe as CompiledGrammar is.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string_view>
#include <vector>

#include "engine/grammar/mask_cache.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar/pushdown.h"

namespace sluice::grammar {

struct CompiledGrammar::Impl {
  Impl(Grammar g, std::shared_ptr<const TokenTable> t);

  // The row of `state`, computed under the exclusive lock when missing. `lock` is a
  // shared lock on `mutex`, held again on return; row pointers from before may dangle.
  const uint32_t* row(std::shared_lock<std::shared_mutex>& lock, uint32_t state);
  // The state after `bytes`, or kDead.
  uint32_t advance(uint32_t state, std::string_view bytes);
  bool is_complete(uint32_t state) const;
  bool is_terminated(uint32_t state) const;
  // mask_walk.cpp: the token mask of a state, from the cache or computed.
  void fill_mask(uint32_t state, std::span<uint64_t> mask);

  const Grammar grammar;
  const std::shared_ptr<const TokenTable> tokens;
  mutable std::shared_mutex mutex;  // guards pushdown
  Pushdown pushdown;
  MaskCache masks;           // by state
  MaskCache relative_masks;  // by relative state, with its exit points
  std::atomic<uint64_t> masks_computed{0};
  std::atomic<uint64_t> masks_from_cache{0};

 private:
  // Adds to `mask` the tokens allowed from `state` below trie node `from` (the root:
  // every token), the tokens at `from` itself left out. Trie nodes with children
  // reached in a state that has an exit go to `exits` when given.
  void walk(uint32_t state, uint32_t from, uint64_t* mask, std::vector<uint32_t>* exits);
  void compute_mask(uint32_t state, uint64_t* mask);
};

}  // namespace sluice::grammar
