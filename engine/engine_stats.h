#pragma once
// What the engine reports for /metrics, without knowing about Prometheus: a polled
// snapshot (EngineStats) and pushed per-event callbacks (EngineObserver). The server
// maps them to vLLM's metric names (vllm:num_requests_running, vllm:kv_cache_usage_perc,
// vllm:prefix_cache_queries/hits, vllm:num_preemptions, vllm:prompt_tokens /
// generation_tokens, vllm:request_success{finished_reason}, vllm:time_to_first_token_seconds,
// vllm:inter_token_latency_seconds, vllm:e2e_request_latency_seconds,
// vllm:request_queue_time_seconds, vllm:request_prompt_tokens / generation_tokens,
// vllm:iteration_tokens_total).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/scheduling/sequence.h"

namespace sluice::engine {

// Speculative decoding, cumulative (vLLM's vllm:spec_decode_* counters).
struct SpeculationStats {
  uint64_t num_drafts = 0;           // sequences that had drafts verified, per step
  uint64_t num_draft_tokens = 0;     // tokens drafted and verified
  uint64_t num_accepted_tokens = 0;  // of those, accepted by the target
  // [k]: drafts accepted at position 0, 1, ... (a draft counts only after all before it)
  std::vector<uint64_t> num_accepted_tokens_per_pos;
};

// Gauges and cumulative counters; a copy taken after the latest step.
struct EngineStats {
  int32_t num_running = 0;   // sequences
  int32_t num_waiting = 0;   // sequences queued in the scheduler, preempted ones included
  int32_t num_pending = 0;   // requests submitted but not yet seen by the engine thread
  int32_t num_active_requests = 0;
  double kv_cache_usage = 0.0;  // 0..1
  int32_t num_kv_blocks = 0;
  int32_t block_size = 0;
  uint64_t kv_cache_bytes = 0;
  uint64_t num_prefix_cache_queries = 0;  // tokens
  uint64_t num_prefix_cache_hits = 0;     // tokens
  uint64_t num_preemptions = 0;
  uint64_t num_prompt_tokens = 0;
  uint64_t num_generation_tokens = 0;
  uint64_t num_steps = 0;
  uint64_t num_iteration_tokens = 0;
  uint64_t num_requests_submitted = 0;
  uint64_t num_requests_rejected = 0;    // 400
  uint64_t num_requests_queue_full = 0;  // 429
  std::array<uint64_t, 6> num_finished{};  // choices, indexed by FinishReason
  SpeculationStats speculation;
};

// One finished request (all its choices), for the per-request histograms.
struct RequestMetrics {
  std::string request_id;
  std::vector<FinishReason> finish_reasons;  // per choice
  int64_t num_prompt_tokens = 0;
  int64_t num_generation_tokens = 0;  // over all choices
  int64_t num_cached_tokens = 0;
  double queue_time_s = 0.0;    // arrival -> first scheduled (0 when never scheduled)
  double prefill_time_s = 0.0;  // first scheduled -> first token
  double ttft_s = 0.0;          // arrival -> first token (0 when none)
  double e2e_s = 0.0;           // arrival -> last finish
  double decode_time_s = 0.0;   // first token -> last finish
  double time_per_output_token_s = 0.0;  // decode_time / (tokens after the first), per choice on average
};

// One engine step.
struct StepMetrics {
  int64_t num_batched_tokens = 0;  // iteration tokens
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  double kv_cache_usage = 0.0;
  int32_t num_preempted = 0;
  int32_t num_constrained = 0;  // rows sampled under a grammar's token mask
};

// Implemented by the server. Every callback runs on the engine thread, between
// steps: it must be quick and must never block (update atomics / histograms).
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void on_step(const StepMetrics& /*step*/) {}
  virtual void on_first_token(double /*ttft_s*/) {}              // per request: its first token
  virtual void on_inter_token_latency(double /*seconds*/) {}     // per later token of each choice
  virtual void on_request_finished(const RequestMetrics& /*request*/) {}
};

}  // namespace sluice::engine
