#pragma once
// Prompt lookup (vLLM's `ngram` method): text that repeats or edits its input — code
// with recurring identifiers, a summary quoting its source, a rewrite — continues the
// way an earlier occurrence of its latest tokens did. For n from max_n down to min_n,
// the sequence's last n tokens are searched for earlier in its prompt and output; at
// the latest earlier match followed by a whole draft (else the earliest match), the
// tokens that followed it are proposed. No model, no state: a sequence with no match
// proposes nothing and decodes as usual.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/speculative/drafter.h"

namespace sluice::engine {

// The proposal for one token sequence: up to max_tokens tokens after an earlier
// occurrence of its longest matching suffix (min_n <= n <= max_n). Empty when none
// matches. Pure: the unit tests call it directly.
void propose_ngram(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n, int32_t max_tokens,
                   std::vector<int32_t>& draft);

class NgramDrafter final : public Drafter {
 public:
  NgramDrafter(int32_t min_n, int32_t max_n) : min_n_(min_n), max_n_(max_n) {}
  void propose(std::span<const DraftRequest> requests) override;

 private:
  int32_t min_n_;
  int32_t max_n_;
};

}  // namespace sluice::engine
