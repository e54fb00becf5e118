#pragma once
// Speculative decoding of one model (label model_name), under sluice's names and,
// when asked, vLLM's (its spec-decode counters, same stems):
//   sluice_spec_decode_num_drafts_total                 steps in which a sequence had drafts verified
//   sluice_spec_decode_num_draft_tokens_total           tokens drafted and verified
//   sluice_spec_decode_num_accepted_tokens_total        of those, accepted by the model
//   sluice_spec_decode_num_accepted_tokens_per_pos_total{position}  accepted at draft position i
// Acceptance rate = accepted / draft tokens; mean accepted length = 1 + accepted / drafts.
// The series exist from the start (zero while speculation is off or idle). The
// registry must outlive it.
// refresh() runs on HTTP threads, any number at once (guarded inside).
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_stats.h"

namespace sluice::server {

class SpeculativeMetrics {
 public:
  SpeculativeMetrics(prometheus::Registry& registry, std::string model_name, bool with_vllm_names);
  ~SpeculativeMetrics();
  SpeculativeMetrics(const SpeculativeMetrics&) = delete;
  SpeculativeMetrics& operator=(const SpeculativeMetrics&) = delete;

  // Counters grow by the change of the engine's totals since the previous refresh.
  void refresh(const engine::SpeculationStats& stats);

 private:
  struct Naming {
    prometheus::Family<prometheus::Counter>* drafts_family;
    prometheus::Family<prometheus::Counter>* draft_tokens_family;
    prometheus::Family<prometheus::Counter>* accepted_family;
    prometheus::Family<prometheus::Counter>* per_pos_family;
    prometheus::Counter* drafts;
    prometheus::Counter* draft_tokens;
    prometheus::Counter* accepted;
    std::vector<prometheus::Counter*> per_pos;  // added as positions appear
  };

  prometheus::Registry& registry_;
  std::string model_name_;
  std::vector<Naming> namings_;  // [0]: sluice's; [1]: vLLM's, when asked
  std::mutex mutex_;
  engine::SpeculationStats last_;  // the totals counted so far
};

}  // namespace sluice::server
