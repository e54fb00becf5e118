#pragma once
// Speculative decoding on the engine thread: the drafter, the drafts proposed before
// each schedule(), and what the verifications accepted (SpeculationStats).
//
// Verification itself is sampling (StepSampler samples the target at each drafted
// position exactly as plain decoding would, and keeps a draft while it equals that
// sample); this part chooses who drafts and how much, and counts.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_stats.h"
#include "engine/models/model.h"
#include "engine/scheduling/sequence.h"
#include "engine/speculative/drafter.h"
#include "engine/speculative/speculative_config.h"

namespace sluice::engine {

// The target's limits a draft model's KV cache is sized from.
struct SpeculationLimits {
  int64_t max_model_len = 0;
  int32_t max_num_seqs = 0;
  int32_t num_kv_blocks = 0;  // the target's pool
  int32_t block_size = 16;
  int64_t max_num_batched_tokens = 0;
  backends::DType kv_dtype = backends::DType::F16;
};

class Speculation {
 public:
  // Starts config's drafter (logged). Throws std::invalid_argument for a config that
  // cannot work, std::runtime_error when a draft model's cache does not fit.
  Speculation(const SpeculativeConfig& config, const Model& target, const SpeculationLimits& limits,
              const std::string& model_name);

  // Clears every running sequence's drafts, then drafts for those that may: decoding,
  // not paused, not opted out, with room left (at most what the request may still
  // emit, nor past the context). Nothing while more than disable_by_batch_size decode.
  void propose(const std::vector<SequencePtr>& running);
  // A row verified num_drafts drafts and emitted num_emitted tokens (the accepted
  // drafts and the target's own): counts it and paces the choice's next draft.
  void learn(const Sequence& seq, size_t num_drafts, size_t num_emitted);
  const SpeculationStats& stats() const { return stats_; }

 private:
  SpeculativeConfig config_;
  int64_t max_model_len_ = 0;
  std::unique_ptr<Drafter> drafter_;
  std::vector<DraftRequest> requests_;  // propose's reused buffer
  SpeculationStats stats_;
};

}  // namespace sluice::engine
