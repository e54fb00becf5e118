#pragma once
// POST /v1/chat/completions: the body parsed and validated into a ChatRequest, or
// the 400 that names the offending field (down to "messages[1].content[0].type").
// Every key is either understood or refused; explicit nulls mean "default".
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proto/errors.h"
#include "proto/generation_options.h"

namespace sluice::proto {

struct ChatMessage {
  std::string role;     // "system" | "user" | "assistant" ("developer" arrives as "system")
  std::string content;  // a string, or the text parts joined with "\n" (as vLLM does)
  std::optional<std::string> name;
};

struct ChatRequest : GenerationOptions {
  std::vector<ChatMessage> messages;  // at least one
  // vLLM: extra variables for the chat template (an object; empty when absent).
  nlohmann::json chat_template_kwargs = nlohmann::json::object();
  // sampling.max_tokens: max_completion_tokens, else max_tokens, else empty (up to the
  // context). sampling.logprobs: top_logprobs (0..20, default 0) when logprobs is
  // true, else empty.
};

using ChatParse = std::variant<ChatRequest, ApiError>;

ChatParse parse_chat_request(std::string_view body, const ParseOptions& parse = {});
// The same, for a body already parsed (a JSON object).
ChatParse parse_chat_json(const nlohmann::json& body, const ParseOptions& parse = {});

// The "messages" array on its own (also used by /tokenize). Errors name
// `param`[i]... .
fields::Error parse_chat_messages(const nlohmann::json& value, const std::string& param,
                                  std::vector<ChatMessage>& out);

}  // namespace sluice::proto
