// CompiledGrammar (the shared pushdown automaton, mask cache and statistics) and
// Matcher (one sequence's parser state). The token mask of a state is a depth-first
// walk of the token trie that follows the automaton's byte rows and prunes every
// subtree whose first byte leads to the dead state.
#include "engine/grammar/matcher.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "engine/grammar/mask_cache.h"
#include "engine/grammar/pushdown.h"
#include "engine/grammar/token_trie.h"

namespace sluice::grammar {
namespace {

constexpr size_t kMaskCacheBytes = size_t{64} << 20;

}  // namespace

struct CompiledGrammar::Impl {
  Impl(Grammar g, std::shared_ptr<const TokenTable> t)
      : grammar(std::move(g)),
        tokens(std::move(t)),
        pushdown(grammar),
        masks(Matcher::mask_words(tokens->vocab_size()), kMaskCacheBytes) {}

  // The row of `state`, computing it under the exclusive lock when missing. `lock` is
  // a shared lock on mutex, held again on return; pointers from before may dangle.
  const uint32_t* row(std::shared_lock<std::shared_mutex>& lock, uint32_t state) {
    const uint32_t* r = pushdown.row(state);
    while (r == nullptr) {
      lock.unlock();
      {
        std::unique_lock exclusive(mutex);
        pushdown.compute_row(state);
      }
      lock.lock();
      r = pushdown.row(state);  // another thread may have dropped the rows meanwhile
    }
    return r;
  }

  uint32_t advance(uint32_t state, std::string_view bytes) {
    std::shared_lock lock(mutex);
    for (char c : bytes) {
      state = row(lock, state)[static_cast<uint8_t>(c)];
      if (state == Pushdown::kDead) break;
    }
    return state;
  }

  bool is_complete(uint32_t state) const {
    std::shared_lock lock(mutex);
    return pushdown.is_complete(state);
  }

  bool is_terminated(uint32_t state) const {
    std::shared_lock lock(mutex);
    return pushdown.is_terminated(state);
  }

  // mask: zeroed, mask_words(vocab) words. Level by level: the trie numbers its
  // nodes breadth-first, so a level's live nodes, kept in increasing order, have their
  // children in increasing order too and the walk reads the trie's arrays forward.
  void walk(uint32_t state, uint64_t* mask) {
    const TokenTable::Trie& trie = tokens->trie();
    thread_local std::vector<std::pair<uint32_t, uint32_t>> level, next_level;  // {trie node, parser state}
    level.clear();
    std::shared_lock lock(mutex);
    if (pushdown.is_complete(state))
      for (int32_t id : tokens->eos_ids()) mask[static_cast<uint32_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    level.emplace_back(0, state);
    const uint32_t* child_begin = trie.child_begin.data();
    const uint8_t* byte = trie.byte.data();
    const uint32_t* token_begin = trie.token_begin.data();
    const int32_t* token_ids = trie.token_ids.data();
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
          for (uint32_t t = token_begin[child]; t < token_begin[child + 1]; ++t) {
            const auto id = static_cast<uint32_t>(token_ids[t]);
            mask[id >> 6] |= uint64_t{1} << (id & 63);
          }
          if (child_begin[child] != child_begin[child + 1]) next_level.emplace_back(child, to);
        }
      }
      level.swap(next_level);
    }
  }

  void fill_mask(uint32_t state, std::span<uint64_t> mask) {
    const size_t words = Matcher::mask_words(tokens->vocab_size());
    if (mask.size() < words) throw std::invalid_argument("fill_mask: the mask is shorter than the vocabulary");
    std::fill(mask.begin() + static_cast<std::ptrdiff_t>(words), mask.end(), 0);
    if (masks.copy_to(state, mask.data())) {
      masks_from_cache.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::fill(mask.begin(), mask.begin() + static_cast<std::ptrdiff_t>(words), 0);
    walk(state, mask.data());
    masks.insert(state, mask.data());
    masks_computed.fetch_add(1, std::memory_order_relaxed);
  }

  const Grammar grammar;
  const std::shared_ptr<const TokenTable> tokens;
  mutable std::shared_mutex mutex;  // guards pushdown
  Pushdown pushdown;
  MaskCache masks;
  std::atomic<uint64_t> masks_computed{0};
  std::atomic<uint64_t> masks_from_cache{0};
};

std::shared_ptr<CompiledGrammar> CompiledGrammar::compile(Grammar grammar, std::shared_ptr<const TokenTable> tokens) {
  if (!tokens) throw GrammarError("no token table to compile the grammar for");
  grammar.validate();
  return std::shared_ptr<CompiledGrammar>(
      new CompiledGrammar(std::make_unique<Impl>(std::move(grammar), std::move(tokens))));
}

CompiledGrammar::CompiledGrammar(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledGrammar::~CompiledGrammar() = default;

const Grammar& CompiledGrammar::grammar() const { return impl_->grammar; }
const TokenTable& CompiledGrammar::tokens() const { return *impl_->tokens; }

MatcherStats CompiledGrammar::stats() const {
  return {impl_->masks_computed.load(std::memory_order_relaxed), impl_->masks_from_cache.load(std::memory_order_relaxed)};
}

Matcher::Matcher(std::shared_ptr<CompiledGrammar> grammar) : grammar_(std::move(grammar)) { reset(); }

void Matcher::fill_mask(std::span<uint64_t> mask) const {
  if (finished_) {
    std::fill(mask.begin(), mask.end(), 0);
    return;
  }
  grammar_->impl().fill_mask(state_, mask);
}

bool Matcher::accept_token(int32_t token) {
  const TokenTable& tokens = grammar_->tokens();
  if (finished_ || token < 0 || token >= tokens.vocab_size()) return false;
  if (tokens.is_eos(token)) {
    if (!is_complete()) return false;
    finished_ = true;
    return true;
  }
  if (tokens.is_special(token) || tokens.bytes(token).empty()) return false;
  return accept_bytes(tokens.bytes(token));
}

bool Matcher::accept_bytes(std::string_view bytes) {
  if (finished_) return bytes.empty();
  const uint32_t next = grammar_->impl().advance(state_, bytes);
  if (next == Pushdown::kDead) return false;
  state_ = next;
  return true;
}

bool Matcher::is_complete() const { return grammar_->impl().is_complete(state_); }
bool Matcher::is_terminated() const { return grammar_->impl().is_terminated(state_); }

void Matcher::reset() {
  state_ = grammar_->impl().pushdown.start();
  finished_ = false;
}

}  // namespace sluice::grammar
