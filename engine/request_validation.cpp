#include "engine/request_validation.h"

#include <string>
#include <utility>

namespace sluice::engine {
namespace {

SubmitResult rejected(std::string message, std::string param) { return submit_rejected(std::move(message), std::move(param)); }

// An embedding is prefill only: the input may fill the whole context, and nothing of
// sampling applies.
std::optional<SubmitResult> validate_embedding(const GenerationRequest& request, const RequestLimits& limits) {
  const auto num_prompt = static_cast<int64_t>(request.prompt_tokens.size());
  if (request.params.n != 1) return rejected("an embedding request has one choice", "n");
  if (request.grammar || request.params.prompt_logprobs)
    return rejected("an embedding request samples nothing", request.prompt_param);
  if (num_prompt > limits.max_model_len) {
    SubmitResult r = rejected("This model's maximum context length is " + std::to_string(limits.max_model_len) +
                                  " tokens. However, your input has " + std::to_string(num_prompt) +
                                  " tokens. Please reduce the length of the input.",
                              request.prompt_param);
    r.code = "context_length_exceeded";
    return r;
  }
  const int64_t num_blocks = (num_prompt + limits.block_size - 1) / limits.block_size;
  if (num_blocks > limits.num_kv_blocks)
    return rejected("the input needs " + std::to_string(num_prompt) + " tokens of KV cache but the cache holds " +
                        std::to_string(static_cast<int64_t>(limits.num_kv_blocks) * limits.block_size),
                    request.prompt_param);
  return std::nullopt;
}

}  // namespace

std::optional<SubmitResult> validate_request(const GenerationRequest& request, const RequestLimits& limits) {
  const SamplingParams& p = request.params;
  const auto num_prompt = static_cast<int64_t>(request.prompt_tokens.size());
  const std::string& prompt_param = request.prompt_param;
  if (request.request_id.empty()) return rejected("the request needs an id", "request_id");
  if (num_prompt == 0) return rejected("the prompt is empty", prompt_param);
  const int64_t vocab = limits.vocab_size;
  const auto outside = [&](int32_t id) { return id < 0 || id >= vocab; };
  for (int32_t id : request.prompt_tokens)
    if (outside(id))
      return rejected("token id " + std::to_string(id) + " is outside the vocabulary (" + std::to_string(vocab) + ")",
                      prompt_param);
  if (request.embed) return validate_embedding(request, limits);
  if (p.n < 1 || p.n > limits.max_n)
    return rejected("n must be between 1 and " + std::to_string(limits.max_n), "n");
  if (request.stop.size() > kMaxStopStrings)
    return rejected("at most " + std::to_string(kMaxStopStrings) + " stop sequences are allowed", "stop");
  if (p.logit_bias) {
    if (p.logit_bias->size() > kMaxLogitBias)
      return rejected("logit_bias may hold at most " + std::to_string(kMaxLogitBias) + " entries", "logit_bias");
    for (const auto& [id, bias] : *p.logit_bias)
      if (outside(id))
        return rejected("logit_bias names token id " + std::to_string(id) + ", outside the vocabulary (0 to " +
                            std::to_string(vocab - 1) + ")",
                        "logit_bias");
  }
  if (request.stop_token_ids.size() > kMaxStopTokenIds)
    return rejected("at most " + std::to_string(kMaxStopTokenIds) + " stop_token_ids are allowed", "stop_token_ids");
  for (int32_t id : request.stop_token_ids)
    if (outside(id))
      return rejected("stop_token_ids names token id " + std::to_string(id) + ", outside the vocabulary (0 to " +
                          std::to_string(vocab - 1) + ")",
                      "stop_token_ids");
  if (p.logprobs && (*p.logprobs < 0 || *p.logprobs > limits.max_logprobs))
    return rejected("logprobs must be between 0 and " + std::to_string(limits.max_logprobs), "logprobs");
  if (p.prompt_logprobs && (*p.prompt_logprobs < 0 || *p.prompt_logprobs > limits.max_logprobs))
    return rejected("prompt_logprobs must be between 0 and " + std::to_string(limits.max_logprobs), "logprobs");
  if (p.max_tokens && *p.max_tokens < 1) return rejected("max_tokens must be at least 1", "max_tokens");
  if (p.min_tokens < 0 || (p.max_tokens && p.min_tokens > *p.max_tokens))
    return rejected("min_tokens must be between 0 and max_tokens", "min_tokens");
  const std::string what = prompt_param == "messages" ? "messages" : "prompt";
  if (num_prompt >= limits.max_model_len) {
    SubmitResult r = rejected("This model's maximum context length is " + std::to_string(limits.max_model_len) +
                                  " tokens. However, your " + what + " has " + std::to_string(num_prompt) +
                                  " tokens. Please reduce the length of the " + what + ".",
                              prompt_param);
    r.code = "context_length_exceeded";
    return r;
  }
  if (p.max_tokens && num_prompt + *p.max_tokens > limits.max_model_len) {
    SubmitResult r = rejected("This model's maximum context length is " + std::to_string(limits.max_model_len) +
                                  " tokens. However, you requested " + std::to_string(num_prompt + *p.max_tokens) +
                                  " tokens (" + std::to_string(num_prompt) + " in the " + what + ", " +
                                  std::to_string(*p.max_tokens) + " in the completion). Please reduce the length of "
                                  "the " + what + " or completion.",
                              "max_tokens");
    r.code = "context_length_exceeded";
    return r;
  }
  const int64_t num_output = p.max_tokens ? *p.max_tokens : limits.max_model_len - num_prompt;
  const int64_t num_kv_tokens = num_prompt + num_output - 1;  // the last token never enters the cache
  const int64_t num_blocks = (num_kv_tokens + limits.block_size - 1) / limits.block_size;
  if (num_blocks > limits.num_kv_blocks)
    return rejected("the request needs " + std::to_string(num_kv_tokens) + " tokens of KV cache but the cache holds " +
                        std::to_string(static_cast<int64_t>(limits.num_kv_blocks) * limits.block_size) +
                        "; lower max_tokens",
                    "max_tokens");
  return std::nullopt;
}

}  // namespace sluice::engine
