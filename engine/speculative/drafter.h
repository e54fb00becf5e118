#pragma once
// A drafter proposes the tokens a sequence will probably generate next, so that the
// target model can verify several of them in one step (speculative decoding).
//
// Proposals are point masses: each drafted token is one guess, not a distribution.
// Verification (speculative_verifier.h) samples the target at each drafted position
// exactly as plain decoding would and keeps a draft while it equals that sample,
// which is the standard rejection rule for a point-mass draft: accepted with
// probability p_target(d), else the sample is a draw from p_target without d. A
// drafter with a proposal distribution of its own (a small draft model beside the
// target) fits behind the same call by returning its tokens here and its
// probabilities beside them, for the general min(1, p/q) rule.
//
// Called on the engine thread, once per step, for every sequence that decodes.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/sequence.h"
#include "engine/speculative/speculative_config.h"

namespace sluice::engine {

struct DraftRequest {
  const Sequence* seq = nullptr;     // decoding: its tokens() are prompt then output
  int32_t max_tokens = 0;            // at most this many proposals (> 0)
  std::vector<int32_t>* draft = nullptr;  // cleared, then filled with 0..max_tokens tokens
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  // One batch so a drafter that runs a model can draft for every sequence in one pass.
  virtual void propose(std::span<const DraftRequest> requests) = 0;
};

// The drafter of config.method; null for `none`.
std::unique_ptr<Drafter> make_drafter(const SpeculativeConfig& config);

}  // namespace sluice::engine
