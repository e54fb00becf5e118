#pragma once
// POST /v1/responses (OpenAI's Responses API), parsed into what sluice already
// serves: a chat-completions request. `input` items become chat messages
// (function_call items an assistant message's tool_calls, function_call_output
// items tool messages), `instructions` a leading system message, flat function
// tools the chat form, `text.format` a response_format, `max_output_tokens`
// max_completion_tokens. The chat parser then checks what the two APIs share
// (ranges, tool names, the tool choice against the tools), its errors renamed to
// this API's fields. Hosted tools, background mode and other features sluice does
// not have are refused with a 400 naming the field. Unknown keys, at any depth, follow
// ParseOptions::strict_fields (fields::FieldPolicy); what the SDK sends back of an
// earlier response (an item's id, status, phase, caller, an output_text's annotations
// and logprobs, ...) is ignored by name, strict or not. (proto/responses.h holds the
// chat and completions response bodies; this file is the Responses API request.)
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/chat.h"
#include "proto/errors.h"
#include "proto/generation_options.h"

namespace sluice::proto {

struct ResponsesRequest {
  std::string model;
  bool stream = false;
  bool store = true;
  std::optional<std::string> previous_response_id;
  std::optional<std::string> instructions;
  // The input as chat-completions messages (never the instructions).
  nlohmann::ordered_json input_messages = nlohmann::ordered_json::array();
  // Every other chat-completions field the request maps to (model, sampling, tools,
  // tool_choice, response_format, stream, user).
  nlohmann::ordered_json chat_fields = nlohmann::ordered_json::object();
  // The request fields the response object repeats, as the SDK's Response type has
  // them (defaults filled in): instructions, max_output_tokens, metadata, ...
  nlohmann::ordered_json echo = nlohmann::ordered_json::object();
  std::vector<std::string> ignored_fields;  // accepted without effect (for a debug log)
};

using ResponsesParse = std::variant<ResponsesRequest, ApiError>;
ResponsesParse parse_responses_request(std::string_view body, const ParseOptions& parse = {});

// The chat request a Responses request asks for: instructions, then `history` (the
// stored conversation of previous_response_id: chat messages), then the input.
std::variant<ChatRequest, ApiError> to_chat_request(const ResponsesRequest& request,
                                                      const nlohmann::ordered_json& history,
                                                      const ParseOptions& parse = {});

// An error of the shared chat code said in this API's words: text.format,
// max_output_tokens, tools[i].parameters, input.
ApiError in_responses_terms(ApiError error);

// The 404 for a previous_response_id that is unknown, deleted, evicted or expired.
ApiError previous_response_not_found(const std::string& id);
// The 404 of GET / DELETE /v1/responses/{id}.
ApiError response_not_found(const std::string& id);

}  // namespace sluice::proto
