#pragma once
// Runs a Grammar over a model's tokens: which tokens may come next, and advancing by
// the one chosen.
//
// CompiledGrammar is the grammar prepared for one TokenTable, plus the caches its
// matchers share (interned parser states, byte transitions, token masks per state),
// bounded in memory. It is shared by every request that uses the same grammar on
// the same model, and is thread-safe: matchers of one grammar may run on different
// threads at once.
//
// Matcher is one sequence's position in the grammar (not thread-safe; cheap to copy,
// so `n` choices or a rebuild after preemption start from a copy or from reset()).
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "engine/grammar/grammar.h"
#include "engine/grammar/token_table.h"

namespace sluice::grammar {

struct MatcherStats {
  uint64_t masks_computed = 0;   // token masks computed by a trie walk
  uint64_t masks_from_cache = 0; // token masks reused from the per-state cache
};

class CompiledGrammar {
 public:
  // Throws GrammarError as Grammar::validate does.
  static std::shared_ptr<CompiledGrammar> compile(Grammar grammar, std::shared_ptr<const TokenTable> tokens);
  ~CompiledGrammar();

  const Grammar& grammar() const;
  const TokenTable& tokens() const;
  MatcherStats stats() const;

  struct Impl;
  Impl& impl() const { return *impl_; }

 private:
  explicit CompiledGrammar(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<CompiledGrammar> grammar);

  // Words of a mask over the vocabulary: bit (id % 64) of word (id / 64).
  static size_t mask_words(int32_t vocab_size) { return (static_cast<size_t>(vocab_size) + 63) / 64; }
  // Sets bit i for every token that may come next: a non-special token whose bytes
  // the grammar can consume from here, and the EOS ids when is_complete(). Other
  // control tokens are never set. `mask` has mask_words(vocab) words.
  void fill_mask(std::span<uint64_t> mask) const;
  // Advances by one token. False (and no change) when the token is not allowed.
  // An EOS id is allowed exactly when is_complete(); it ends the match.
  bool accept_token(int32_t token);
  // Advances by raw bytes (tests, and text the grammar is forced through). False (and
  // no change) when some prefix of `bytes` is not allowed.
  bool accept_bytes(std::string_view bytes);
  // The output so far is a whole match of the root rule (EOS may come now).
  bool is_complete() const;
  // Complete, and no byte can follow: only EOS may come.
  bool is_terminated() const;
  // Nothing may follow at all (an EOS was accepted).
  bool is_finished() const { return finished_; }
  // Back to the start of the grammar.
  void reset();

  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  std::shared_ptr<CompiledGrammar> grammar_;
  uint32_t state_ = 0;  // an interned set of parser stacks (CompiledGrammar::Impl)
  bool finished_ = false;
};

}  // namespace sluice::grammar
