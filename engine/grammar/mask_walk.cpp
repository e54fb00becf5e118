// Token masks: a level-order walk of the token trie that follows the pushdown
// automaton's byte rows and prunes every subtree whose first byte leads to the dead
// state; states with a context go through their relative state (pushdown.h), whose
// walk is shared by every context, plus short walks from the exit state below the
// trie nodes where the relative walk reached the context.
#include <algorithm>
#include <utility>
#include <vector>

#include "engine/grammar/compiled_grammar_impl.h"
#include "engine/grammar/token_trie.h"

namespace sluice::grammar {
namespace {

void set_bit(uint64_t* mask, int32_t id) {
  const auto i = static_cast<uint32_t>(id);
  mask[i >> 6] |= uint64_t{1} << (i & 63);
}

}  // namespace

// The trie numbers its nodes breadth-first, so one level's live nodes, kept in
// increasing order, have their children in increasing order too: the walk reads the
// trie's arrays forward.
void CompiledGrammar::Impl::walk(uint32_t state, uint32_t from, uint64_t* mask, std::vector<uint32_t>* exits) {
  const TokenTable::Trie& trie = tokens->trie();
  thread_local std::vector<std::pair<uint32_t, uint32_t>> level, next_level;  // {trie node, parser state}
  level.assign(1, {from, state});
  const uint32_t* child_begin = trie.child_begin.data();
  const uint8_t* byte = trie.byte.data();
  const uint32_t* token_begin = trie.token_begin.data();
  const int32_t* token_ids = trie.token_ids.data();
  std::shared_lock lock(mutex);
  while (!level.empty()) {
    next_level.clear();
    uint32_t row_state = Pushdown::kDead;
    const uint32_t* next = nullptr;
    for (const auto [node, at] : level) {
      if (at != row_state || next == nullptr) {
        next = row(lock, at);  // may relock: no other row pointer is kept across it
        row_state = at;
      }
      for (uint32_t child = child_begin[node], last = child_begin[node + 1]; child < last; ++child) {
        const uint32_t to = next[byte[child]];
        if (to == Pushdown::kDead) continue;
        for (uint32_t t = token_begin[child]; t < token_begin[child + 1]; ++t) set_bit(mask, token_ids[t]);
        if (child_begin[child] == child_begin[child + 1]) continue;
        next_level.emplace_back(child, to);
        if (exits != nullptr && pushdown.has_exit(to)) exits->push_back(child);
      }
    }
    level.swap(next_level);
  }
}

void CompiledGrammar::Impl::compute_mask(uint32_t state, uint64_t* mask) {
  Pushdown::Split split;
  bool complete = false;
  {
    std::unique_lock lock(mutex);
    split = pushdown.split(state);
    complete = pushdown.is_complete(state);
  }
  if (split.relative == Pushdown::kDead) {
    walk(state, 0, mask, nullptr);
  } else {
    thread_local std::vector<uint32_t> exits;
    exits.clear();
    if (!relative_masks.copy_to(split.relative, mask, &exits)) {
      walk(split.relative, 0, mask, &exits);
      relative_masks.insert(split.relative, mask, exits);
    }
    for (uint32_t node : exits) walk(split.exit, node, mask, nullptr);
  }
  if (complete)
    for (int32_t id : tokens->eos_ids()) set_bit(mask, id);
}

void CompiledGrammar::Impl::fill_mask(uint32_t state, std::span<uint64_t> mask) {
  const size_t words = Matcher::mask_words(tokens->vocab_size());
  if (mask.size() < words) throw std::invalid_argument("fill_mask: the mask is shorter than the vocabulary");
  std::fill(mask.begin() + static_cast<std::ptrdiff_t>(words), mask.end(), 0);
  if (masks.copy_to(state, mask.data())) {
    masks_from_cache.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::fill(mask.begin(), mask.begin() + static_cast<std::ptrdiff_t>(words), 0);
  compute_mask(state, mask.data());
  masks.insert(state, mask.data());
  masks_computed.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace sluice::grammar
