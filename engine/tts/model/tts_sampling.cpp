#include "engine/tts/model/tts_sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::engine::tts {
namespace {

SamplingParams stage_params(const StageSampling& defaults, const TtsRequest& r) {
  SamplingParams p;
  p.temperature = defaults.do_sample ? defaults.temperature : 0.0f;
  p.top_k = defaults.top_k;
  p.top_p = defaults.top_p;
  if (r.temperature) p.temperature = *r.temperature;
  if (r.top_k) p.top_k = *r.top_k;
  if (r.top_p) p.top_p = *r.top_p;
  return p;
}

}  // namespace

std::optional<PromptError> check_sampling(const TtsRequest& r) {
  if (r.temperature && !(std::isfinite(*r.temperature) && *r.temperature >= 0.0f))
    return PromptError{"temperature must be a finite number >= 0", "temperature"};
  if (r.top_k && *r.top_k < 0) return PromptError{"top_k must be >= 0 (0: off)", "top_k"};
  if (r.top_p && !(*r.top_p > 0.0f && *r.top_p <= 1.0f)) return PromptError{"top_p must be in (0, 1]", "top_p"};
  if (r.repetition_penalty && !(std::isfinite(*r.repetition_penalty) && *r.repetition_penalty > 0.0f))
    return PromptError{"repetition_penalty must be a finite number > 0", "repetition_penalty"};
  if (r.max_frames && *r.max_frames < 1) return PromptError{"max_frames must be at least 1", "max_frames"};
  return std::nullopt;
}

int32_t resolve_max_frames(const TtsConfig& config, const TtsRequest& r, int32_t default_max_frames) {
  return r.max_frames.value_or(std::max(std::min(config.max_new_tokens - 1, default_max_frames), 1));
}

SamplingParams talker_sampling(const TtsConfig& config, const TtsRequest& r, int32_t max_frames) {
  SamplingParams p = stage_params(config.talker_sampling, r);
  p.repetition_penalty = r.repetition_penalty.value_or(config.talker_sampling.repetition_penalty);
  p.min_tokens = r.ignore_eos ? max_frames + 1 : 2;  // EOS banned while fewer frames
  p.min_tokens_banned = {static_cast<int32_t>(config.codec.eos)};
  return p;
}

SamplingParams predictor_sampling(const TtsConfig& config, const TtsRequest& r) {
  return stage_params(config.predictor_sampling, r);
}

void suppress_control_codes(const TtsConfig& config, std::span<float> logits) {
  const auto vocab = static_cast<int64_t>(logits.size());
  const int64_t eos = config.codec.eos;
  for (int64_t t = std::max<int64_t>(0, vocab - 1024); t < vocab; ++t)
    if (t != eos) logits[static_cast<size_t>(t)] = -std::numeric_limits<float>::infinity();
}

}  // namespace sluice::engine::tts
