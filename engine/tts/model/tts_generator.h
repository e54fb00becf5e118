#pragma once
// Runs N speech sequences of one TtsModel together, one codec frame per step:
//
//   start(request)  -> an id (or a PromptError-style error naming the field)
//   step()          -> for every running sequence, this step's frame of G codes
//                      (G = num_code_groups, 16) and/or its finish
//
// One step = one talker forward over every running sequence (whole prompts for new
// ones, one feedback row for the rest) -> codebook 0 per sequence (logit processing
// as Qwen3TTSForConditionalGeneration.generate sets it up: ids vocab-1024..vocab
// suppressed except EOS, EOS masked for the first 2 frames, repetition penalty over
// the generated codebook-0 ids, then temperature / top-k / top-p; temperature 0 is
// greedy and the penalty still applies) -> one batched code predictor pass for all
// sequences that did not stop -> the frames. A sequence ends with "stop" when it
// samples the codec EOS (that step has no frame) or "length" after max_frames frames
// (the frame of that step is its last). The official `max_new_tokens = N` gives at
// most N - 1 frames (tests/fixtures/qwen3_tts/README.md, talker_golden): max_frames =
// N - 1 reproduces it.
//
// Each sequence samples from its own seeded stream and the kernels are batch
// invariant, so a sequence's codes never depend on what else runs with it.
// Not thread-safe: the model's engine thread owns a generator.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "engine/models/kv_cache.h"
#include "engine/sampler.h"
#include "engine/tts/model/code_predictor.h"
#include "engine/tts/model/talker.h"
#include "engine/tts/model/tts_model.h"
#include "engine/tts/model/tts_prompt.h"

namespace sluice::engine::tts {

struct TtsRequest {
  PromptRequest prompt;              // text, voice, language, instructions, text feeding
  std::optional<uint64_t> seed;      // absent: a random stream
  // Overrides of the checkpoint's defaults. temperature, top_k and top_p apply to
  // the talker and the code predictor; repetition_penalty to the talker only.
  std::optional<float> temperature;  // 0: greedy
  std::optional<int32_t> top_k;      // 0: off
  std::optional<float> top_p;        // (0, 1]
  std::optional<float> repetition_penalty;
  std::optional<int32_t> max_frames;  // absent: TtsGeneratorOptions::default_max_frames
  bool ignore_eos = false;            // benchmarks: EOS never sampled, every sequence runs max_frames
};

// A sequence reserves KV for its prompt plus max_frames positions when it starts,
// so a running sequence never runs out. Talker KV costs 2 x 28 layers x 8 heads x
// 128 x 2 bytes = 112 KiB per position at F16 (0.6B and 1.7B alike): the default
// 16384 positions take 1.75 GiB, eight sequences of ~2048 frames.
struct TtsGeneratorOptions {
  int32_t max_sequences = 8;     // running at once
  int64_t kv_tokens = 16384;     // talker KV positions shared by all sequences
  backends::DType kv_dtype = backends::DType::F16;  // the talker's (the code predictor's is F32); F32 for parity tests
  // Frames of a request that names none: the checkpoint's max_new_tokens - 1,
  // capped here (the official wrapper's own fallback is max_new_tokens 2048).
  int32_t default_max_frames = 2047;
};

struct TtsStarted {
  int64_t id = -1;
  std::string error;  // empty when started
  std::string param;  // the request field at fault
  bool instructions_dropped = false;  // a 0.6B checkpoint ignored them
  bool ok() const { return error.empty(); }
};

struct TtsFrameEvent {
  int64_t id = 0;
  std::vector<int32_t> codes;   // [G] this step's frame; empty when it stopped without one
  bool finished = false;
  std::string_view finish_reason;  // "stop" (codec EOS) | "length" (max_frames), when finished
};

// Cumulative wall time per stage (each stage ends with a device synchronize).
struct TtsStageTimes {
  double talker_ms = 0.0;     // input rows, forward, codebook-0 sampling
  double predictor_ms = 0.0;  // all sub-steps and their sampling
  int64_t steps = 0;
  int64_t frames = 0;
};

class TtsGenerator {
 public:
  TtsGenerator(const TtsModel& model, TtsGeneratorOptions options = {});
  ~TtsGenerator();

  // Builds the prompt (needs the model's tokenizer) and admits the sequence when a
  // slot and KV for its whole length are free.
  TtsStarted start(const TtsRequest& request);
  // The same with a prompt built elsewhere (synthetic_prompt for benchmarks);
  // request.prompt is ignored.
  TtsStarted start(TtsPrompt prompt, const TtsRequest& request);

  // One frame for every running sequence; finished sequences leave.
  std::vector<TtsFrameEvent> step();
  // Drops a running sequence (no event); false when the id is not running.
  bool cancel(int64_t id);

  int64_t num_running() const { return static_cast<int64_t>(running_.size()); }
  const TtsStageTimes& times() const { return times_; }

 private:
  struct Sequence;
  void build_talker_step();
  void finish(size_t index);

  const TtsModel& model_;
  const TtsConfig& config_;
  TtsGeneratorOptions options_;
  KvCache cache_;
  Talker talker_;
  CodePredictor predictor_;
  Sampler talker_sampler_;
  Sampler predictor_sampler_;
  std::vector<int32_t> free_blocks_;
  std::vector<std::unique_ptr<Sequence>> running_;
  int64_t next_id_ = 1;
  TtsStageTimes times_;
  // Per-step scratch.
  TalkerStep step_;
  std::vector<float> logits_;
};

}  // namespace sluice::engine::tts
