#pragma once
// vLLM's /tokenize and /detokenize: request parsing and response bodies.
//   POST /tokenize   {model?, prompt | messages, add_special_tokens?, add_generation_prompt?,
//                     continue_final_message?, chat_template_kwargs?, return_token_strs?}
//                    -> {count, max_model_len, tokens[, token_strs]}
// (routers such as vllm-router tokenize chat requests here to route by prefix, with
// the chat request's template fields.)
//   POST /detokenize {model?, tokens}     -> {prompt}
// `model` is optional, as in vLLM: the server uses its only model when absent.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/chat.h"
#include "proto/errors.h"

namespace sluice::proto {

struct TokenizeRequest {
  std::optional<std::string> model;
  std::optional<std::string> prompt;  // exactly one of prompt and messages
  std::vector<ChatMessage> messages;  // rendered through the chat template
  bool add_special_tokens = true;     // default: true for prompt, false for messages (vLLM)
  bool add_generation_prompt = true;  // messages only; default: unless continuing
  bool continue_final_message = false;  // messages only: as in chat
  Json chat_template_kwargs = Json::object();
  bool return_token_strs = false;
  std::vector<std::string> ignored_fields;  // unknown keys when not strict (for a debug log)

  bool is_chat() const { return !prompt.has_value(); }
};

struct DetokenizeRequest {
  std::optional<std::string> model;
  std::vector<int32_t> tokens;  // may be empty
  std::vector<std::string> ignored_fields;  // unknown keys when not strict (for a debug log)
};

using TokenizeParse = std::variant<TokenizeRequest, ApiError>;
using DetokenizeParse = std::variant<DetokenizeRequest, ApiError>;

// Unknown keys, at any depth: ignored and listed unless parse.strict_fields.
TokenizeParse parse_tokenize_request(std::string_view body, const ParseOptions& parse = {});
DetokenizeParse parse_detokenize_request(std::string_view body, const ParseOptions& parse = {});

// token_strs: the piece of each token, only when the request asked for them.
nlohmann::ordered_json tokenize_response(const std::vector<int32_t>& tokens, int32_t max_model_len,
                                         const std::vector<std::string>* token_strs = nullptr);
nlohmann::ordered_json detokenize_response(const std::string& prompt);

}  // namespace sluice::proto
