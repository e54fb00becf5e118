#pragma once
// The sampling rules every speech sequence follows, shared by TtsGenerator (one
// utterance, `sluice speak` / bench) and SpeechEngine (the server): a request's
// overrides over the checkpoint's defaults, their validation, and the codebook-0
// logit processing of the official Qwen3TTSForConditionalGeneration.generate
// (qwen_tts/core/models/modeling_qwen3_tts.py). Pure functions; any thread.
#include <cstdint>
#include <optional>
#include <span>

#include "engine/sampler.h"
#include "engine/tts/model/tts_config.h"
#include "engine/tts/model/tts_generator.h"
#include "engine/tts/model/tts_prompt.h"

namespace sluice::engine::tts {

// A bad override (temperature < 0, top_p outside (0, 1], ...), naming the field.
std::optional<PromptError> check_sampling(const TtsRequest& request);

// The frames a request gets: its max_frames, else the checkpoint's max_new_tokens - 1
// capped at default_max_frames (at least 1).
int32_t resolve_max_frames(const TtsConfig& config, const TtsRequest& request, int32_t default_max_frames);

// Codebook 0: temperature / top-k / top-p and the repetition penalty, with the codec
// EOS banned for the first 2 frames (for all max_frames when ignore_eos).
SamplingParams talker_sampling(const TtsConfig& config, const TtsRequest& request, int32_t max_frames);
// Codebooks 1..G-1: temperature / top-k / top-p, no penalty.
SamplingParams predictor_sampling(const TtsConfig& config, const TtsRequest& request);

// Masks the codec vocabulary's control ids (its last 1024 rows) except EOS.
void suppress_control_codes(const TtsConfig& config, std::span<float> logits);

}  // namespace sluice::engine::tts
