#pragma once
// POST /v1/chat/completions: the body parsed and validated into a ChatRequest, or
// the 400 that names the offending field (down to "messages[1].content[0].type").
// Every key is understood, ignored by name (OpenAI fields that ask for nothing here,
// such as an echoed assistant message's `annotations`), or unknown: at any depth, an
// unknown key is ignored and listed in ignored_fields unless ParseOptions::strict_fields
// makes it a 400 naming its path. Explicit nulls mean "default".
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proto/errors.h"
#include "proto/generation_options.h"

namespace sluice::proto {

// A call an assistant message made (a round-tripped response).
struct ChatToolCall {
  std::string id;         // may be empty (some clients drop it); then no tool message can answer it
  std::string name;       // function.name
  std::string arguments;  // function.arguments: a JSON string as sent (normally a JSON object's text)
};

struct ChatMessage {
  // "system" | "user" | "assistant" | "tool" ("developer" arrives as "system"; the
  // legacy "function" role arrives as "tool" with `name` set and no tool_call_id).
  std::string role;
  std::string content;  // a string, or the text parts joined with "\n" (as vLLM does)
  bool content_null = false;  // assistant content null or absent (the template sees none)
  std::optional<std::string> name;
  std::vector<ChatToolCall> tool_calls;    // assistant: tool_calls (or the legacy function_call)
  std::optional<std::string> tool_call_id; // tool: the call it answers
  std::optional<std::string> reasoning;    // assistant: reasoning_content / reasoning sent back
};

// One function the model may call (tools[i] with type "function", or the legacy functions[i]).
struct ChatTool {
  std::string name;  // [A-Za-z0-9_-]{1,64}, plus '.' and ':' (MCP-style names); unique in a request
  std::optional<std::string> description;
  Json parameters;   // a JSON Schema object; null when absent (no parameters)
  // The tool as the chat template sees it, keys in the client's order:
  // {"type": "function", "function": {...}} (a legacy functions[i] wrapped so).
  Json as_sent;
  std::optional<bool> strict;  // as sent
  std::string param;           // where it came from, for errors: "tools[2]" or "functions[2]"
};

struct ToolChoice {
  enum class Mode { none, auto_, required, function };
  Mode mode = Mode::auto_;  // OpenAI: auto when tools are given, none when not
  std::string function;     // Mode::function: its name (one of the tools)
};

struct ChatRequest : GenerationOptions {
  std::vector<ChatMessage> messages;  // at least one
  // vLLM: extra variables for the chat template (an object; empty when absent).
  Json chat_template_kwargs = Json::object();
  std::vector<ChatTool> tools;        // tools, or the legacy functions (never both)
  ToolChoice tool_choice;             // tool_choice, or the legacy function_call; none without tools
  bool parallel_tool_calls = true;
  bool include_reasoning = true;      // vLLM: false drops the reasoning from the response
  // vLLM: the template's generation prompt (default: unless continuing), or the
  // final assistant message continued as the start of the answer (a prefill).
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  // sampling.max_tokens: max_completion_tokens, else max_tokens, else empty (up to the
  // context). sampling.logprobs: top_logprobs (0..20, default 0) when logprobs is
  // true, else empty.
};

using ChatParse = std::variant<ChatRequest, ApiError>;

ChatParse parse_chat_request(std::string_view body, const ParseOptions& parse = {});
// The same, for a body already parsed (a JSON object).
ChatParse parse_chat_json(const Json& body, const ParseOptions& parse = {});

// chat_template_kwargs (an object whose keys the template does not reserve), also
// read by /tokenize.
fields::Error read_chat_template_kwargs(const Json& value, Json& out);

// vLLM's continue_final_message: the answer continues the final assistant message,
// so `resolved` (the generation prompt) defaults to off and may not be on; the last
// message must be the assistant's. Errors name the param.
fields::Error resolve_continuation(const std::vector<ChatMessage>& messages, bool continue_final_message,
                                   std::optional<bool> add_generation_prompt, bool& resolved);

// The "messages" array on its own (also used by /tokenize). Errors name
// `param`[i]... ; unknown keys inside the messages go to `policy`.
fields::Error parse_chat_messages(const Json& value, const std::string& param,
                                  std::vector<ChatMessage>& out, const fields::FieldPolicy& policy);

}  // namespace sluice::proto
