#include "server/api/generation/response_budget.h"

#include <algorithm>
#include <string>

namespace sluice::server {

int64_t estimate_response_logprobs(std::span<const engine::GenerationRequest> requests, const ResponseShape& shape,
                                   int64_t max_model_len) {
  int64_t total = 0;
  for (const engine::GenerationRequest& request : requests) {
    const engine::SamplingParams& p = request.params;
    const auto num_prompt = static_cast<int64_t>(request.prompt_tokens.size());
    if (p.prompt_logprobs)  // the echoed prompt, scored once, repeated in every returned choice
      total += static_cast<int64_t>(shape.num_returned) * num_prompt * (1 + *p.prompt_logprobs);
    if (shape.want_logprobs && p.logprobs && !shape.streaming && !shape.score_only) {
      const int64_t num_output = std::max<int64_t>(0, p.max_tokens ? *p.max_tokens : max_model_len - num_prompt);
      total += static_cast<int64_t>(std::max(1, p.n)) * num_output * (1 + *p.logprobs);
    }
  }
  return total;
}

std::optional<proto::ApiError> check_response_logprobs(std::span<const engine::GenerationRequest> requests,
                                                       const ResponseShape& shape, int64_t max_model_len,
                                                       int64_t limit) {
  const int64_t estimate = estimate_response_logprobs(requests, shape, max_model_len);
  if (estimate <= limit) return std::nullopt;
  const int32_t top = requests.empty() ? 0 : requests.front().params.logprobs.value_or(0);
  const char* param = !shape.chat ? "logprobs" : top > 0 ? "top_logprobs" : "logprobs";
  return proto::invalid_request(
      "This request could return " + std::to_string(estimate) +
          " log-probability entries (for each choice, (echoed prompt tokens + max_tokens) x (1 + " + param +
          ")) but a response may hold at most " + std::to_string(limit) +
          " (max_response_logprobs); lower n, " + param + ", max_tokens or the number of prompts.",
      param);
}

}  // namespace sluice::server
