#pragma once
// The engine of one Qwen3-TTS model: speech requests as sequences on the same
// Scheduler and paged BlockPool as text (token budget, priorities, queue limit,
// preemption, deadlines), one codec frame per step for every running sequence:
//
//   engine thread:  drain inbox -> Scheduler::schedule -> one talker forward over
//                   every scheduled row (prompt chunks, recomputes, feedback rows)
//                   -> codebook 0 per sampling sequence -> one batched code
//                   predictor pass -> Scheduler::update / finish -> frames to the
//                   codec worker
//   codec thread:   per request a CodecStream; decodes pending frames (the first
//                   `first_chunk_frames` alone, then `chunk_frames` at a time, or
//                   all that piled up while it was busy, up to 50) and pushes
//                   AudioDelta events, then the request's ChoiceFinish.
//
// The codec runs on its own backend and thread, so a long utterance never holds up
// another voice and, on a GPU, decoding overlaps the steps. On the CPU the two take
// turns on the cores (compute_turns.h): their pools would stall each other.
//
// A sequence's "tokens" are its prompt rows (placeholders: the rows themselves live
// in the engine's per-request state) followed by its codebook-0 ids; the scheduler
// only counts them. Row p >= prompt rows is the feedback of frame p - prompt rows,
// so a preempted sequence recomputes from the frames it keeps. Prefix caching keys a
// prompt row by its content (tts_prompt.h: prompt_row_keys), so requests that share
// leading rows (a cloned voice's reference transcript and codes, a speaker's fixed
// prefix) compute them once; blocks past the prompt are never cached.
//
// Events on the request's RequestStream (one choice): AudioDelta (24 kHz float PCM,
// in order, exactly the samples of decoding all frames at once; for an ICL voice
// clone, of decoding the reference's codes and then the frames, the reference's
// samples dropped), then ChoiceFinish:
// "stop" (codec EOS), "length" (max frames), "timeout" (deadline; the frames made
// before it are decoded and sent first), "abort" (cancel, stop(): nothing more is
// decoded), "error" (a failed step, a failed decode, or the engine or codec thread
// stopped: health() then says "dead"). num_prompt_tokens = input text tokens,
// num_completion_tokens = frames.
//
// Thread-safety as Engine (both run on engine_shell.h): submit(), abort(), stats(),
// health() from any thread; stop() not from a stream wake-up. The TtsModel and CodecDecoder (and their backends) must
// outlive the engine; nothing else may use them while it runs.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backends/dtype.h"
#include "engine/engine.h"
#include "engine/engine_shell.h"
#include "engine/engine_stats.h"
#include "engine/request_stream.h"
#include "engine/scheduling/scheduler.h"
#include "engine/tts/codec/codec_decoder.h"
#include "engine/compute_turns.h"
#include "engine/tts/model/tts_generator.h"
#include "engine/tts/model/tts_model.h"

namespace sluice::engine::tts {

class SpeechCodecWorker;
class SpeechObserver;

struct SpeechEngineConfig {
  std::string model_name = "tts";
  uint64_t kv_cache_bytes = 1ull << 30;  // talker KV pool (112 KiB per position at F16 for 0.6B/1.7B)
  int32_t block_size = 16;
  int32_t max_num_seqs = 32;             // speech sequences running at once
  int64_t max_num_batched_tokens = 2048; // talker rows per step
  int32_t max_waiting = 256;             // queued requests beyond which submit says queue_full
  std::optional<std::chrono::milliseconds> default_deadline;
  size_t stream_capacity = 4096;         // audio deltas a stream buffers before the request is aborted
  backends::DType kv_dtype = backends::DType::F16;  // the talker's pool (the code predictor's KV is F32)
  int32_t default_max_frames = 2047;     // frames of a request that names none (capped by the checkpoint)
  int64_t max_decode_frames = 50;        // frames the codec worker decodes in one call at most
  bool enable_prefix_caching = true;     // share the KV of identical leading prompt rows
  // Shared with the process's other CPU engines (compute_turns.h); null: the engine
  // keeps its own when the talker and the codec are both on the CPU.
  ComputeTurns* compute_turns = nullptr;
};

struct SpeechRequest {
  std::string request_id;  // unique among the requests in flight
  TtsRequest tts;          // seed, sampling overrides, max_frames (tts.prompt is not read)
  // The prompt's rows, built by the caller (build_prompt on the server's prepare pool,
  // synthetic_prompt in benchmarks): the engine sees token rows, never text.
  TtsPrompt prompt;
  int32_t priority = 0;    // lower is served first
  std::optional<Clock::time_point> deadline;
  int32_t first_chunk_frames = 1;  // frames of the first audio delta: time to first audio
  int32_t chunk_frames = 4;        // frames per later delta (more when the decoder fell behind)
};

// Per-request figures for the speech metrics (the shared ones go to EngineObserver).
class SpeechObserver {
 public:
  virtual ~SpeechObserver() = default;
  virtual void on_first_audio(double /*seconds_since_arrival*/) {}
  // audio_s: seconds of audio sent; wall_s: arrival -> finish.
  virtual void on_speech_finished(FinishReason /*reason*/, double /*audio_s*/, double /*wall_s*/) {}
  virtual void on_speech_step(int64_t /*frames*/) {}
  // An ICL request's codec stream was primed with its reference codes: reused from a
  // kept stream (primed_codec_cache.h) or decoded.
  virtual void on_reference_primed(bool /*reused*/) {}
};

class SpeechEngine {
 public:
  // Sizes the talker KV pool from config.kv_cache_bytes; throws std::invalid_argument
  // when it holds no block or a limit is not positive.
  SpeechEngine(const TtsModel& model, CodecDecoder& codec, SpeechEngineConfig config,
               EngineObserver* observer = nullptr, SpeechObserver* speech_observer = nullptr);
  ~SpeechEngine();  // stop()
  SpeechEngine(const SpeechEngine&) = delete;
  SpeechEngine& operator=(const SpeechEngine&) = delete;

  void start();
  void stop();  // every request in flight finishes "abort"; joins both threads; idempotent

  // Bad sampling values, an empty prompt or one past the served length are `rejected`
  // with the param named; a full queue is `queue_full`; after stop() `shutting_down`.
  SubmitResult submit(SpeechRequest request);
  // Ends a request in flight with "abort" at the next step (nothing more is
  // decoded); false when no request with that id is in flight.
  bool abort(std::string_view request_id);

  EngineStats stats() const;
  // "dead" once the engine or codec thread stopped on an exception (the requests it
  // held ended with "error"), with why.
  EngineHealth health(std::chrono::nanoseconds step_timeout) const;
  // Why the engine died; nullopt while it lives.
  std::optional<std::string> death_reason() const;
  // stop() was called (or the engine died): requests end with "abort" from here on.
  bool is_stopping() const;
  const TtsModel& model() const { return model_; }
  int64_t max_model_len() const { return max_model_len_; }
  int32_t num_kv_blocks() const { return num_blocks_; }
  int32_t sample_rate() const;

 private:
  struct Active;
  struct InboxItem;
  using Queued = std::unique_ptr<InboxItem>;

  void loop();
  bool drain_inbox();
  void check_cancellations();
  void run_step(ScheduledStep& step);
  void finish_request(std::string id, FinishReason reason, std::string error);
  void fail_step(const ScheduledStep& step, const std::string& what);
  void publish_stats(const ScheduledStep* step);
  void die(const std::string& reason, std::vector<Queued> queued);
  void end_queued(std::vector<Queued> queued, FinishReason reason, const std::string& why);
  void shutdown(FinishReason reason, const std::string& why);

  const TtsModel& model_;
  CodecDecoder& codec_;
  SpeechEngineConfig config_;
  EngineObserver* observer_;
  SpeechObserver* speech_observer_;
  int64_t max_model_len_ = 0;
  int32_t num_blocks_ = 0;
  uint64_t kv_bytes_ = 0;

  // --- engine thread only ---
  std::unique_ptr<KvCache> cache_;
  std::unique_ptr<Talker> talker_;
  std::unique_ptr<CodePredictor> predictor_;
  std::unique_ptr<Sampler> talker_sampler_, predictor_sampler_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unordered_map<std::string, std::unique_ptr<Active>> active_;
  TalkerStep talker_step_;
  std::vector<float> logits_;
  std::unique_ptr<ComputeTurns> own_turns_;  // when the config shares none
  ComputeTurns* turns_ = nullptr;            // the steps' and the codec's turns on the CPU
  std::unique_ptr<SpeechCodecWorker> codec_worker_;

  // Shared with the other threads: inbox, ids in flight, lifecycle, stats. Declared
  // last: its thread is joined before the rest goes.
  EngineShell<Queued> shell_;
};

}  // namespace sluice::engine::tts
