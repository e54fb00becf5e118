#include "proto/chat_render.h"

#include "proto/template_kwargs.h"

namespace sluice::proto {
namespace {

using OJson = nlohmann::ordered_json;

// {"id", "type", "function": {"name", "arguments"}} with the arguments an object when
// they are the text of one.
chat::Value tool_call_value(const ChatToolCall& call) {
  OJson arguments = call.arguments;
  OJson parsed = OJson::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) arguments = std::move(parsed);
  OJson out = OJson::object();
  if (!call.id.empty()) out["id"] = call.id;
  out["type"] = "function";
  out["function"] = {{"name", call.name}, {"arguments", std::move(arguments)}};
  return template_value(out);
}

}  // namespace

std::vector<chat::ChatMessage> template_messages(const std::vector<ChatMessage>& messages) {
  std::vector<chat::ChatMessage> out;
  out.reserve(messages.size());
  for (const ChatMessage& message : messages) {
    chat::ChatMessage converted{message.role, message.content, {}};
    if (message.content_null) converted.fields.emplace_back("content", chat::Value::none());
    if (message.name) converted.fields.emplace_back("name", chat::Value(*message.name));
    if (!message.tool_calls.empty()) {
      chat::ValueList calls;
      for (const ChatToolCall& call : message.tool_calls) calls.push_back(tool_call_value(call));
      converted.fields.emplace_back("tool_calls", chat::Value(std::move(calls)));
    }
    if (message.tool_call_id) converted.fields.emplace_back("tool_call_id", chat::Value(*message.tool_call_id));
    if (message.reasoning) converted.fields.emplace_back("reasoning_content", chat::Value(*message.reasoning));
    out.push_back(std::move(converted));
  }
  return out;
}

OrderedTools tools_in_order(const ChatRequest& request) {
  OrderedTools out;
  for (const ChatTool& tool : request.tools) {
    out.for_template.push_back(tool.as_sent);
    out.parameters.push_back(tool.parameters.is_null() ? std::string() : tool.parameters.dump());
  }
  return out;
}

std::optional<std::string> continued_prompt(std::string rendered, const std::string& final_content) {
  const size_t at = final_content.empty() ? std::string::npos : rendered.rfind(final_content);
  if (at == std::string::npos) return std::nullopt;
  rendered.resize(at + final_content.size());
  return rendered;
}

ApiError final_message_not_continuable() {
  return invalid_request("The final assistant message cannot be continued: the chat template does not show its "
                         "content as sent.",
                         "messages");
}

}  // namespace sluice::proto
