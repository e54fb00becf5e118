// CompiledGrammar and Matcher: a matcher is a parser state id of its grammar's
// shared pushdown automaton; the token masks are in mask_walk.cpp.
#include "engine/grammar/matcher.h"

#include <algorithm>
#include <utility>

#include "engine/grammar/compiled_grammar_impl.h"

namespace sluice::grammar {
namespace {

// Masks by state, and masks of relative states (fewer: one serves every context).
constexpr size_t kMaskCacheBytes = size_t{12} << 20;
constexpr size_t kRelativeMaskCacheBytes = size_t{4} << 20;

}  // namespace

CompiledGrammar::Impl::Impl(Grammar g, std::shared_ptr<const TokenTable> t)
    : grammar(std::move(g)),
      tokens(std::move(t)),
      pushdown(grammar),
      masks(Matcher::mask_words(tokens->vocab_size()), kMaskCacheBytes),
      relative_masks(Matcher::mask_words(tokens->vocab_size()), kRelativeMaskCacheBytes) {}

const uint32_t* CompiledGrammar::Impl::row(std::shared_lock<std::shared_mutex>& lock, uint32_t state) {
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

uint32_t CompiledGrammar::Impl::advance(uint32_t state, std::string_view bytes) {
  std::shared_lock lock(mutex);
  for (char c : bytes) {
    state = row(lock, state)[static_cast<uint8_t>(c)];
    if (state == Pushdown::kDead) break;
  }
  return state;
}

bool CompiledGrammar::Impl::is_complete(uint32_t state) const {
  std::shared_lock lock(mutex);
  return pushdown.is_complete(state);
}

bool CompiledGrammar::Impl::is_terminated(uint32_t state) const {
  std::shared_lock lock(mutex);
  return pushdown.is_terminated(state);
}

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
