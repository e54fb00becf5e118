#pragma once
// A parsed chat request as its model's chat template sees it: the messages and tools
// transformers' apply_chat_template would get, after vLLM's one normalization (a
// tool call's arguments sent as JSON text become an object, so that templates that
// write `arguments | tojson` do not quote them twice).
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "proto/chat.h"

namespace sluice::proto {

std::vector<chat::ChatMessage> template_messages(const std::vector<ChatMessage>& messages);

// The request's tools in the client's key order (the template prints them, and a
// schema's property order is the order the grammar writes arguments in).
struct OrderedTools {
  Json for_template = Json::array();  // [{"type": "function", "function": {...}}]
  std::vector<std::string> parameters;  // per tool: its parameters schema as JSON text ("" when none)
};
OrderedTools tools_in_order(const ChatRequest& request);

// continue_final_message: the rendered conversation cut right after the final
// message's content, so what follows continues it (the template's end-of-turn markup
// is dropped, as vLLM does); nullopt when the template does not show the content as
// sent. The error of a refusal, naming "messages".
std::optional<std::string> continued_prompt(std::string rendered, const std::string& final_content);
ApiError final_message_not_continuable();

}  // namespace sluice::proto
