#pragma once
// A drafter proposes the tokens a sequence will probably generate next, so that the
// target model can verify several of them in one step (speculative decoding).
//
// Proposals are point masses: each drafted token is one guess, not a distribution.
// Verification (speculative_verifier.h) samples the target at each drafted position
// exactly as plain decoding would and keeps a draft while it equals that sample,
// which is the standard rejection rule for a point-mass draft: accepted with
// probability p_target(d), else the sample is a draw from p_target without d. Both
// drafters are point masses: prompt lookup, and a draft model's greedy tokens (a
// draft model sampling from its own distribution would need the general
// min(1, p/q) rule and its probabilities beside the tokens).
//
// Called on the engine thread, once per step, for every sequence that decodes.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "engine/scheduling/sequence.h"
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

// What a drafter that runs a model (config.draft_model) gets from the engine.
struct DraftModelSetup {
  int64_t target_vocab_size = 0;  // drafted ids stay below it
  int64_t num_blocks = 0;         // the draft's own KV pool
  int64_t block_size = 16;
  backends::DType kv_dtype = backends::DType::F16;
  int64_t max_chunk_tokens = 256;  // tokens the draft computes in one pass
  int64_t max_rows = 4;            // sequences one proposal drafts for, at most
};

// The drafter of config.method; null for `none`. Throws std::invalid_argument for a
// draft_model config without its model, backends::OutOfMemoryError when the draft's
// cache does not fit.
std::unique_ptr<Drafter> make_drafter(const SpeculativeConfig& config, const DraftModelSetup& setup = {});

}  // namespace sluice::engine
