#include "server/api/text_fit.h"

namespace sluice::server {

std::optional<proto::ApiError> text_too_long(int64_t max_model_len, int64_t min_tokens, size_t num_bytes,
                                             const std::string& param, int64_t reserve) {
  if (min_tokens + reserve <= max_model_len) return std::nullopt;
  proto::ApiError error = proto::invalid_request(
      "This model's maximum context length is " + std::to_string(max_model_len) + " tokens. However, your " + param +
          " is " + std::to_string(num_bytes) + " bytes long, at least " + std::to_string(min_tokens) +
          " tokens. Please reduce the length of the " + param + ".",
      param);
  error.code = "context_length_exceeded";
  return error;
}

}  // namespace sluice::server
