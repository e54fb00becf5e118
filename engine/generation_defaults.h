#pragma once
// A model's generation defaults: the sampling settings a request gets for the fields
// it leaves out (like vLLM's generation config and llama-server's --temp / -n).
// Sources, lowest to highest: sluice's built-ins (SamplingParams' OpenAI defaults),
// the model file (GGUF general.sampling.*, a safetensors folder's
// generation_config.json), the daemon's generation_config, the model entry's
// generation; a request's own field always wins. Plain data; any thread.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/sampler.h"

namespace sluice::engine {

struct GenerationDefaults {
  std::optional<float> temperature;
  std::optional<float> top_p;
  std::optional<int32_t> top_k;  // -1 or 0: off
  std::optional<float> min_p;
  std::optional<float> presence_penalty;
  std::optional<float> frequency_penalty;
  std::optional<float> repetition_penalty;
  std::optional<int32_t> max_tokens;
  // For a request that would otherwise run to the end of the context (a chat
  // request without max_tokens): sluice's cap so a chat answers in seconds. Below
  // max_tokens, which also replaces the completions API's 16.
  std::optional<int32_t> unbounded_max_tokens;

  bool empty() const;
  // The fields set, as "temperature=0.7 top_k=40", for the load log ("" when none).
  std::string describe() const;
};

// `top` wins field by field where it is set.
GenerationDefaults overlay(const GenerationDefaults& base, const GenerationDefaults& top);

// Which of the defaultable fields a request set itself.
struct SamplingFieldsGiven {
  bool temperature = false;
  bool top_p = false;
  bool top_k = false;
  bool min_p = false;
  bool presence_penalty = false;
  bool frequency_penalty = false;
  bool repetition_penalty = false;
  bool max_tokens = false;
};

// The request's params with every field it did not give taken from `defaults`. A
// defaulted max_tokens is capped to the room the context leaves after the prompt
// (max_model_len - num_prompt_tokens, at least 1), so a default never turns a
// request that fits into a 400; one the request gave is left for validation.
SamplingParams apply_generation_defaults(const GenerationDefaults& defaults, const SamplingFieldsGiven& given,
                                         SamplingParams params, int64_t num_prompt_tokens, int64_t max_model_len);

// A message naming the first field outside the range a request may use ("" when
// all are valid): the same ranges as the API, so a default is always a value a
// client could have sent. `top_k` 0 counts as off.
std::string validate(const GenerationDefaults& defaults);

}  // namespace sluice::engine
