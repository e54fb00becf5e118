#pragma once
// What submit() checks before a request is queued: ids in the vocabulary, the
// limits of n, stop sequences, logit_bias, logprobs and max_tokens, and that the
// prompt and its output fit the context and the KV pool. A refusal names the
// offending field (SubmitResult::param) and, for the context, code
// "context_length_exceeded", as OpenAI does.
#include <cstdint>
#include <optional>

#include "engine/engine_shell.h"
#include "engine/request.h"

namespace sluice::engine {

struct RequestLimits {
  int64_t vocab_size = 0;
  int64_t max_model_len = 0;
  int32_t num_kv_blocks = 0;
  int32_t block_size = 16;
  int32_t max_n = 1;         // choices per request
  int32_t max_logprobs = 20;
};

// Nothing when the request may be queued, else the refusal.
std::optional<SubmitResult> validate_request(const GenerationRequest& request, const RequestLimits& limits);

}  // namespace sluice::engine
