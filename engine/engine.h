#pragma once
// The engine of one model: a thread that owns all scheduling state and runs
//   drain inbox -> [Speculation::propose] -> Scheduler::schedule -> StepSampler::run
//   (the model's step and its sampling) -> Scheduler::update -> OutputProcessor
//   (detokenize, stop checks, grammar, deltas, finishes)
// until stop(). Other threads talk to it only through submit() / abort() (a locked
// inbox) and the per-request RequestStream; the engine never waits on a consumer.
//
// Failures: an exception from a step (a backend out of memory, a kernel error) ends
// that step's requests with "error" and frees their blocks; the engine goes on with
// the next step. One escaping everything else stops the thread: every request in
// flight ends with "error", submit() refuses, and health() says why.
//
// Cancellation: a consumer's RequestStream::cancel(), abort(request_id), a deadline
// or a full stream all end the request at the next step ("abort" / "timeout") and
// free its KV blocks. When there is nothing to do the thread sleeps on a condition
// variable. stop() finishes every request in flight with "abort" and joins.
//
// submit(), abort(), stats(), health() are thread-safe; stop() too, but never from an observer
// callback or a stream wake-up (they run on the engine thread). The Model (and its
// backend) must outlive the Engine.
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/dtype.h"
#include "engine/compute_turns.h"
#include "engine/engine_shell.h"
#include "engine/engine_stats.h"
#include "engine/scheduling/kv_events.h"
#include "engine/model_runner.h"
#include "engine/models/model.h"
#include "engine/scheduling/prefill_pacer.h"
#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/sampler.h"
#include "engine/scheduling/scheduler.h"
#include "engine/speculative/speculative_config.h"
#include "engine/tokenizer/tokenizer.h"

namespace sluice::engine {

class OutputProcessor;
class Speculation;
class StepSampler;

struct EngineConfig {
  std::string model_name = "model";       // for the logs
  uint64_t kv_cache_bytes = 0;  // KV pool budget (blocks = bytes / bytes_per_block); 0: automatic_kv_budget()
  int32_t block_size = 16;
  int32_t max_num_seqs = 256;
  int64_t max_num_batched_tokens = 2048;
  int32_t max_waiting = 1024;              // queued sequences (choices) beyond which submit says queue_full
  // Choices one submit_all may queue (0: up to max_waiting); more is rejected, as it
  // could never be queued: a single request must not take the whole queue.
  int32_t max_waiting_per_request = 0;
  int64_t max_model_len = 0;               // 0: the model's trained context length, capped to the KV pool
  int64_t long_prefill_token_threshold = 0;
  // SchedulerConfig's; 0: max_num_batched_tokens; < 0: prefill_cap_while_decoding's default.
  int64_t max_prefill_tokens_while_decoding = 0;
  bool enable_prefix_caching = true;
  SpeculativeConfig speculative;           // off unless its method says otherwise
  backends::DType kv_dtype = backends::DType::F16;
  std::optional<std::chrono::milliseconds> default_deadline;  // for requests that set none
  size_t stream_capacity = 4096;           // deltas a stream buffers before the request is aborted
  int32_t max_n = kMaxChoices;             // choices per request
  int32_t max_logprobs = 20;
  // Shared by the process's CPU engines: each step takes a turn (compute_turns.h).
  // Null: steps run whenever they are ready (a GPU, or the only engine).
  ComputeTurns* compute_turns = nullptr;
  // Receives the prefix cache's changes once per step that made any (kv_events.h);
  // null: none are recorded. Must outlive the Engine.
  KvEventSink* kv_events = nullptr;
};

// The KV budget when kv_cache_bytes is 0. On the CPU, 256 MiB. On a GPU, what vLLM's
// gpu_memory_utilization = 0.9 gives: the memory free now (weights loaded) less 10%
// of the device, less a reserve for the largest step's activations and logits
// (doubled for the 16-bit copies of GEMM inputs) and 1 GiB for cuBLAS, graphs,
// dequantized weight tiles and sampling. 0 when nothing is left.
uint64_t automatic_kv_budget(const ModelHparams& hparams, const EngineConfig& config, backends::DeviceKind device,
                             const backends::MemoryInfo& memory);

// The prompt tokens a step takes while sequences decode: `configured` when >= 0,
// else the backend's default: on the CPU a cap paced in time (prefill_pacer.h: about
// one decode step's worth of prompt tokens, measured), starting from 32; 256 on a GPU,
// whose steps cost little per prompt token.
int64_t prefill_cap_while_decoding(int64_t configured, backends::DeviceKind device);
bool paces_prefill(int64_t configured, backends::DeviceKind device);
// The smallest cap pacing sets: a chunk this small costs little next to any decode step.
inline constexpr int64_t kMinPacedPrefillTokens = 16;

class Engine {
 public:
  // Sizes the KV pool from config.kv_cache_bytes (logged) and allocates it. Throws
  // std::invalid_argument when the budget holds no block, a limit is not positive, or
  // an explicit max_model_len does not fit the pool.
  Engine(Model& model, const tokenizer::Tokenizer& tokenizer, EngineConfig config,
         EngineObserver* observer = nullptr);
  ~Engine();  // stop()
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void start();  // spawns the engine thread
  void stop();   // finishes everything in flight with "abort" and joins; idempotent

  SubmitResult submit(GenerationRequest request);
  // All or nothing, for the prompts of one API request: every request is validated
  // before any is queued, and the queue must take all their choices at once. On
  // acceptance `streams` holds one stream per request, in order; on a refusal nothing
  // was queued (so nothing is aborted or counted as such).
  SubmitResult submit_all(std::vector<GenerationRequest> requests,
                          std::vector<std::shared_ptr<RequestStream>>& streams);
  // False when no request with that id is in flight (or queued for admission).
  bool abort(std::string_view request_id);

  EngineStats stats() const;
  // Drops the prefix cache's blocks that no request holds, on the engine thread
  // between steps; the future gets how many. It throws std::future_error
  // (broken_promise) when the engine stopped or died before getting to it.
  std::future<int32_t> flush_prefix_cache();
  // Not ok when the engine thread died, or when its current step started more than
  // step_timeout ago (zero or negative: never wedged).
  EngineHealth health(std::chrono::nanoseconds step_timeout) const;
  const EngineConfig& config() const { return config_; }
  int64_t max_model_len() const { return max_model_len_; }
  int32_t num_kv_blocks() const { return num_blocks_; }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  struct InboxItem {
    GenerationRequest request;
    std::shared_ptr<RequestStream> stream;
    Clock::time_point arrival;
  };

  bool drain_inbox();  // false once stop() was called
  void admit(InboxItem item);
  void loop_steps();
  int32_t run_step(ScheduledStep& step);
  void fail_step(const ScheduledStep& step, const std::string& what);
  void die(const std::string& reason, std::vector<InboxItem> queued);
  void shutdown();
  void publish_stats(const StepMetrics* step);
  void publish_kv_events();  // hands the step's recorded KV-cache events to the sink

  Model& model_;
  const tokenizer::Tokenizer tokenizer_;  // a cheap copy (shared tables)
  EngineConfig config_;
  EngineObserver* observer_;
  int64_t max_model_len_ = 0;
  int32_t num_blocks_ = 0;
  uint64_t kv_bytes_ = 0;

  // --- engine thread only ---
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Scheduler> scheduler_;
  std::optional<PrefillPacer> prefill_pacer_;  // set: the prefill cap follows measured step times
  std::unique_ptr<StepSampler> sampler_;
  std::unique_ptr<OutputProcessor> output_;
  std::unique_ptr<Speculation> speculation_;   // null: no speculative decoding
  std::vector<KvCacheEvent> kv_event_log_;     // the block pool records here when kv_events is set

  // Shared with the other threads: inbox, ids in flight, lifecycle, stats. Declared
  // last: its thread is joined before the rest goes.
  EngineShell<InboxItem> shell_;
};

}  // namespace sluice::engine
