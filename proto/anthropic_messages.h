#pragma once
// POST /v1/messages and /v1/messages/count_tokens (the Anthropic Messages API): the
// body validated and translated into the chat request sluice already serves, and the
// Anthropic error shape. The translation: `system` becomes a leading system message;
// an assistant's tool_use blocks become its tool_calls (arguments: the input object as
// JSON text); a user's tool_result blocks become tool messages (before the user's
// text, as Anthropic orders them); tools' input_schema is the function's parameters;
// tool_choice any -> required, tool -> the named function; thinking -> the
// template's enable_thinking; output_config.format -> a strict json_schema
// response_format. Errors name the Anthropic field ("messages[1].content[0].id").
// Unknown keys, at any depth, follow ParseOptions::strict_fields (fields::FieldPolicy):
// ignored and listed by path in ignored_fields, or the 400 naming that path. The SDK's
// fields that change nothing here (a tool_use's caller, a text block's citations,
// cache_control anywhere, ...) are ignored by name, strict or not.
#include <string>
#include <string_view>
#include <variant>

#include "proto/chat.h"
#include "proto/errors.h"

namespace sluice::proto {

// The chat request it translates to (the body is parsed once; the translation is a
// copy of its DOM, keys in the client's order, read by parse_chat_json).
using MessagesRequest = ChatRequest;

using MessagesParse = std::variant<MessagesRequest, ApiError>;

// `count_tokens`: the count_tokens body (no max_tokens, no sampling, no stream).
MessagesParse parse_messages_request(std::string_view body, const ParseOptions& parse = {},
                                     bool count_tokens = false);

// An error of the shared chat code (its parameter names and message), said in this
// API's words: tools[i].input_schema, stop_sequences, max_tokens.
ApiError in_messages_terms(ApiError error);

// {"type":"error","error":{"type": ..., "message": ...}}; the type follows the status
// (400 invalid_request_error, 401 authentication_error, 403 permission_error, 404
// not_found_error, 413 request_too_large, 429 rate_limit_error, 503 overloaded_error,
// else api_error).
std::string anthropic_error_body(const ApiError& error);

}  // namespace sluice::proto
