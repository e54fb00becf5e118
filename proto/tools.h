#pragma once
// The tool-calling fields of a chat body: `tools` (or the legacy `functions`) and
// `tool_choice` (or the legacy `function_call`), read together once every key of the
// body is known, because the choice is checked against the tools (and JSON object
// keys arrive in any order). Errors name the offending field, down to
// "tools[1].function.name".
#include <string_view>
#include <vector>

#include "proto/chat.h"
#include "proto/fields.h"

namespace sluice::proto {

// Function names: 1 to 64 of [A-Za-z0-9_-] (OpenAI), plus '.' and ':' (MCP-style names).
inline constexpr size_t kMaxToolNameBytes = 64;
bool is_valid_tool_name(std::string_view name);

// tools, functions, tool_choice, function_call: the keys parse_chat_tools reads.
bool is_tool_field(std::string_view key);

// Reads the tool fields of `body` (the whole chat request object) into `tools` and
// `choice`. Nulls and an empty array mean "no tools"; the choice defaults to auto
// with tools and none without; "auto" without tools is none (nothing to call). Unknown
// keys inside the tools and the choice go to `policy`.
fields::Error parse_chat_tools(const fields::Json& body, std::vector<ChatTool>& tools, ToolChoice& choice,
                               const fields::FieldPolicy& policy);

}  // namespace sluice::proto
