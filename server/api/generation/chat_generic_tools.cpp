#include "server/api/generation/chat_generic_tools.h"

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar_spec.h"

namespace sluice::server {
namespace {

using Json = nlohmann::ordered_json;
using Mode = proto::ToolChoice::Mode;

// One tool as a line of compact JSON: {"name":..,"description":..,"parameters":..},
// the schema in the client's key order.
std::string tool_line(const proto::ChatTool& tool, const std::string& parameters) {
  std::string line = "{\"name\":" + Json(tool.name).dump();
  if (tool.description && !tool.description->empty()) line += ",\"description\":" + Json(*tool.description).dump();
  if (!parameters.empty()) line += ",\"parameters\":" + parameters;  // compact already (proto::tools_in_order)
  return line + "}";
}

// A call as the envelope holds it (the grammar's bytes: chat::tool_call_shape(generic)).
std::string envelope_call(const proto::ChatToolCall& call) {
  const Json parsed = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  const std::string arguments = parsed.is_object() ? parsed.dump() : Json(call.arguments).dump();
  return "{\"name\": " + Json(call.name).dump() + ", \"arguments\": " + arguments + "}";
}

std::string envelope_of(const std::vector<proto::ChatToolCall>& calls) {
  std::string out = "{\"tool_calls\": [";
  for (size_t i = 0; i < calls.size(); ++i) out += (i == 0 ? "" : ", ") + envelope_call(calls[i]);
  return out + "]}";
}

bool json_response(const proto::ChatRequest& request) {
  using Kind = grammar::GrammarSpec::Kind;
  return request.structured_output &&
         (request.structured_output->spec.kind == Kind::json_schema ||
          request.structured_output->spec.kind == Kind::json_object);
}

void append_paragraph(std::string& text, const std::string& paragraph) {
  text = text.empty() ? paragraph : text + "\n\n" + paragraph;
}

}  // namespace

std::string generic_tools_instructions(const proto::ChatRequest& request, const proto::OrderedTools& ordered) {
  std::string text = "Tools you can call:";
  for (size_t i = 0; i < request.tools.size(); ++i)
    text += "\n" + tool_line(request.tools[i], i < ordered.parameters.size() ? ordered.parameters[i] : std::string());
  const bool named = request.tool_choice.mode == Mode::function;
  const std::string call = "{\"tool_calls\": [{\"name\": " +
                           (named ? Json(request.tool_choice.function).dump() : std::string("\"<tool name>\"")) +
                           ", \"arguments\": {<arguments>}}]}";
  text += "\n\nReply with one JSON object only";
  if (named) return text + ", calling " + request.tool_choice.function + ": " + call;
  if (request.tool_choice.mode == Mode::required)
    return text + (request.parallel_tool_calls ? ", calling tools: " : ", calling one tool: ") + call;
  text += ": " + call + (request.parallel_tool_calls ? " to call tools, or " : " to call one tool, or ");
  text += json_response(request) ? "{\"response\": <your reply as JSON, in the requested format>} to reply."
                                 : "{\"response\": \"<your reply>\"} to reply in text.";
  return text;
}

std::vector<proto::ChatMessage> generic_tool_messages(const proto::ChatRequest& request,
                                                      const proto::OrderedTools& ordered, bool instructions,
                                                      GenericPlacement placement) {
  std::vector<proto::ChatMessage> out;
  out.reserve(request.messages.size() + 1);
  bool last_from_tools = false;  // out.back() is a user message made of tool results
  for (const proto::ChatMessage& message : request.messages) {
    if (message.role == "tool") {
      std::string name = message.name.value_or("");
      for (const proto::ChatMessage& earlier : request.messages) {  // the call it answers names the function
        for (const proto::ChatToolCall& call : earlier.tool_calls)
          if (message.tool_call_id && call.id == *message.tool_call_id) name = call.name;
      }
      std::string result = "Tool " + (name.empty() ? std::string("result") : name);
      if (message.tool_call_id) result += " (call " + *message.tool_call_id + ")";
      result += " returned:\n" + message.content;
      if (last_from_tools) {
        append_paragraph(out.back().content, result);
      } else {
        proto::ChatMessage user;
        user.role = "user";
        user.content = std::move(result);
        out.push_back(std::move(user));
      }
      last_from_tools = true;
      continue;
    }
    if (message.role == "user" && last_from_tools) {  // keeps user and assistant turns alternating
      append_paragraph(out.back().content, message.content);
      continue;
    }
    last_from_tools = false;
    proto::ChatMessage copy = message;
    if (!copy.tool_calls.empty()) {
      copy.content = envelope_of(copy.tool_calls);
      copy.content_null = false;
      copy.tool_calls.clear();
    }
    out.push_back(std::move(copy));
  }
  if (!instructions) return out;
  const std::string text = generic_tools_instructions(request, ordered);
  if (placement == GenericPlacement::system) {
    if (!out.empty() && out.front().role == "system") {
      append_paragraph(out.front().content, text);
    } else {
      proto::ChatMessage system;
      system.role = "system";
      system.content = text;
      out.insert(out.begin(), std::move(system));
    }
    return out;
  }
  for (proto::ChatMessage& message : out) {
    if (message.role != "user") continue;
    message.content = message.content.empty() ? text : text + "\n\n" + message.content;
    return out;
  }
  proto::ChatMessage user;
  user.role = "user";
  user.content = text;
  out.insert(out.begin(), std::move(user));
  return out;
}

}  // namespace sluice::server
