#pragma once
// POST /v1/embeddings on the wire: the request (OpenAI's fields plus vLLM's
// truncate_prompt_tokens and add_special_tokens) and the response body. The server
// tokenizes the texts, the engine pools each input's final hidden states.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/errors.h"

namespace sluice::proto {

inline constexpr size_t kMaxEmbeddingInputs = 2048;  // OpenAI's limit per request

struct EmbeddingsRequest {
  std::optional<std::string> model;
  // Exactly one of the two is non-empty: texts to tokenize, or inputs given as ids.
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> token_inputs;
  bool base64 = false;                        // encoding_format "base64"
  std::optional<int32_t> dimensions;          // the server answers 400 unless the model's own width
  // vLLM: keep each input's last N tokens (-1: the model's context length); absent: an
  // input longer than the context is refused.
  std::optional<int64_t> truncate_prompt_tokens;
  bool add_special_tokens = true;             // vLLM: BOS etc. as the tokenizer adds them
  std::vector<std::string> ignored_fields;    // unknown keys, not strict: accepted and ignored

  size_t num_inputs() const { return texts.empty() ? token_inputs.size() : texts.size(); }
};

using EmbeddingsParse = std::variant<EmbeddingsRequest, ApiError>;

// strict_fields: an unknown key is a 400 instead of ignored.
EmbeddingsParse parse_embeddings_request(std::string_view body, bool strict_fields = false);

// The last n tokens of an input (vLLM's truncate_prompt_tokens keeps the end).
void keep_last_tokens(std::vector<int32_t>& tokens, int64_t n);

// Standard base64 (with padding) of the vectors' little-endian float32 bytes.
std::string float32_base64(const std::vector<float>& values);

// {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": ...}],
//  "model": ..., "usage": {"prompt_tokens": n, "total_tokens": n}}
std::string embeddings_response(const std::string& model, const std::vector<std::vector<float>>& vectors,
                                bool base64, int64_t prompt_tokens);

}  // namespace sluice::proto
