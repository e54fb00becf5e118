#pragma once
// One step's sampling: runs the model on the step and picks each sampling row's
// token(s). On the device when it can (plain rows: only the chosen ids come back);
// on the host otherwise: grammar masks (host-side), drafts to verify, prompt scoring
// and embeddings (they need the logits or hidden states on the host). Host rows are
// sampled in parallel on the backend's host threads, each range with a Sampler of
// its own.
//
// Verification of drafts samples the target at each drafted position exactly as plain
// decoding would (same processors, same mask, same history, same one random draw per
// token) and keeps a draft while it equals that sample. For a point-mass draft this
// is the standard rejection rule: draft d is accepted with probability p_target(d),
// and on a rejection the token is a draw from p_target with d removed, renormalised.
// It also makes the output the plain decoder's, token for token, greedy or seeded: a
// row's logits do not depend on what else the step computes (batch invariance), so
// only the speed changes with speculation.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "engine/model_runner.h"
#include "engine/sampler.h"
#include "engine/scheduling/scheduler.h"

namespace sluice::grammar {
class Matcher;
}

namespace sluice::engine {

// What a step sampled, row by row (the step's sequences that sample, in order).
struct StepSamples {
  std::vector<SampleResult> results;  // every row's tokens, one after another
  std::vector<size_t> first;          // row -> its first result
  std::vector<size_t> num_emitted;    // row -> its tokens: 1 + the drafts accepted
  std::vector<std::string> errors;    // row -> a grammar failure, or empty (host rows only)
  std::span<const float> logits;      // host rows: the step's logits (prompt scoring reads them)
  int32_t num_constrained = 0;        // rows sampled under a grammar mask

  std::span<const SampleResult> tokens(size_t row) const {
    return std::span(results).subspan(first[row], num_emitted[row]);
  }
  const std::string* error(size_t row) const {
    return row < errors.size() && !errors[row].empty() ? &errors[row] : nullptr;
  }
};

class StepSampler {
 public:
  // num_samplers: the host threads that sample rows (at least one); draw_order: the
  // device's where the device samples (sampler.h: DrawOrder).
  StepSampler(backends::Backend& backend, int32_t vocab_size, int num_samplers, DrawOrder draw_order);

  // Runs the step on runner and samples it; valid until the next run().
  const StepSamples& run(const ScheduledStep& step, ModelRunner& runner);
  // A prompt token's log-probability and the num_top best at its position.
  SampleResult score(std::span<const float> logits, int32_t token, int32_t num_top);

 private:
  void sample_on_host(const ScheduledStep& step, ModelRunner& runner, StepSamples& out);
  void sample_row(size_t row, size_t sampler_index, std::span<const float> logits, const ModelRunner& runner,
                  StepSamples& out);
  void sample_on_device(const ScheduledStep& step, ModelRunner& runner, StepSamples& out);

  backends::Backend& backend_;
  std::vector<std::unique_ptr<Sampler>> samplers_;  // one per host thread; [0] for device rows
  std::vector<std::vector<uint64_t>> masks_;         // one token mask buffer per sampler
  std::vector<std::vector<int32_t>> histories_;      // per sampler: output + drafts, for the penalties
  std::vector<Sequence*> rows_;                      // sample_on_host's reused buffers
  std::vector<grammar::Matcher*> row_matchers_;      // each sampling row's grammar matcher, or null
  std::vector<const std::vector<int32_t>*> row_drafts_;  // each sampling row's drafts (often none)
  std::vector<backends::RowSampling> device_rows_;   // sample_on_device's reused buffers
  std::vector<backends::LogitAdjust> device_adjust_;
  std::vector<size_t> device_adjust_ends_;
  std::vector<backends::SampledToken> device_tokens_;
  StepSamples samples_;
};

}  // namespace sluice::engine
