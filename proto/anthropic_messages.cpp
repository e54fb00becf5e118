#include "proto/anthropic_messages.h"

#include <limits>
#include <set>
#include <utility>

#include "proto/fields.h"

namespace sluice::proto {

using fields::Error;
using OJson = nlohmann::ordered_json;

namespace {

using fields::type_error;

ApiError unsupported_value(const std::string& param, const std::string& value, std::string_view supported) {
  return invalid_request("Invalid value for '" + param + "': '" + value + "'; " + std::string(supported), param);
}

// A block's "type", required and a string.
Error block_type(const OJson& block, const std::string& param, std::string& out) {
  if (!block.is_object()) return type_error(param, "an object", block);
  auto type = block.find("type");
  if (type == block.end() || type->is_null()) return fields::missing_field(param + ".type");
  if (!type->is_string()) return type_error(param + ".type", "a string", *type);
  out = type->get<std::string>();
  return std::nullopt;
}

Error read_text(const OJson& block, const std::string& param, const std::string& key, std::string& out) {
  auto it = block.find(key);
  if (it == block.end() || it->is_null()) return fields::missing_field(param + "." + key);
  if (!it->is_string()) return type_error(param + "." + key, "a string", *it);
  out = it->get<std::string>();
  return std::nullopt;
}

// The fields the SDK's block types carry that change nothing here, ignored by name
// (strict or not): cache_control on any block (prompt caching: the prefix cache needs
// no breakpoints), citations on text blocks (a sent-back answer's sources), caller on
// tool_use blocks (who invoked the tool; anthropic 2.14 echoes it in every sent-back
// tool_use). Any other key goes to the policy.
Error text_block_keys(const OJson& block, const std::string& param, const fields::FieldPolicy& policy) {
  return policy.check_keys(block, param, {"type", "text"}, {"cache_control", "citations"});
}

// A string, or text blocks joined with "\n" (system, tool_result content).
Error read_text_or_blocks(const OJson& v, const std::string& param, std::string& out,
                          const fields::FieldPolicy& policy) {
  if (v.is_string()) {
    out = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return type_error(param, "a string or an array of text blocks", v);
  std::string joined;
  for (size_t j = 0; j < v.size(); ++j) {
    const std::string block_param = param + "[" + std::to_string(j) + "]";
    std::string type, text;
    if (auto e = block_type(v[j], block_param, type)) return e;
    if (type != "text") return unsupported_value(block_param + ".type", type, "only 'text' blocks are supported here.");
    if (auto e = text_block_keys(v[j], block_param, policy)) return e;
    if (auto e = read_text(v[j], block_param, "text", text)) return e;
    if (j > 0) joined += '\n';
    joined += text;
  }
  out = std::move(joined);
  return std::nullopt;
}

// What the Anthropic messages become: chat messages in the OpenAI wire form.
struct Translation {
  explicit Translation(const fields::FieldPolicy& p) : policy(p) {}
  const fields::FieldPolicy& policy;  // unknown keys inside the messages
  OJson messages = OJson::array();
  std::set<std::string> tool_use_ids;  // of the assistant turns so far
};

Error read_tool_use(const OJson& block, const std::string& param, OJson& call, Translation& t) {
  if (auto e = t.policy.check_keys(block, param, {"type", "id", "name", "input"}, {"cache_control", "caller"}))
    return e;
  std::string id, name;
  if (auto e = read_text(block, param, "id", id)) return e;
  if (auto e = read_text(block, param, "name", name)) return e;
  auto input = block.find("input");
  if (input == block.end() || input->is_null()) return fields::missing_field(param + ".input");
  if (!input->is_object()) return type_error(param + ".input", "an object", *input);
  t.tool_use_ids.insert(id);
  call = {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", input->dump()}}}};
  return std::nullopt;
}

Error read_tool_result(const OJson& block, const std::string& param, OJson& message, const Translation& t) {
  if (auto e = t.policy.check_keys(block, param, {"type", "tool_use_id", "content", "is_error"}, {"cache_control"}))
    return e;
  std::string id, content;
  if (auto e = read_text(block, param, "tool_use_id", id)) return e;
  if (!t.tool_use_ids.contains(id)) {
    return invalid_request("Invalid value for '" + param + ".tool_use_id': '" + id +
                               "' answers no tool_use block of an earlier assistant message.",
                           param + ".tool_use_id");
  }
  auto value = block.find("content");
  if (value != block.end() && !value->is_null()) {
    if (auto e = read_text_or_blocks(*value, param + ".content", content, t.policy)) return e;
  }
  auto is_error = block.find("is_error");
  if (is_error != block.end() && !is_error->is_null() && !is_error->is_boolean())
    return type_error(param + ".is_error", "a boolean", *is_error);
  // The template has no error flag: the text says it, as the model would read it.
  if (is_error != block.end() && *is_error == true) content = "Error: " + content;
  message = {{"role", "tool"}, {"tool_call_id", id}, {"content", content}};
  return std::nullopt;
}

Error read_blocks(const OJson& content, const std::string& param, const std::string& role, Translation& t) {
  std::string text, reasoning;
  bool has_text = false;
  OJson calls = OJson::array();
  for (size_t j = 0; j < content.size(); ++j) {
    const std::string block_param = param + "[" + std::to_string(j) + "]";
    const OJson& block = content[j];
    std::string type;
    if (auto e = block_type(block, block_param, type)) return e;
    if (type == "text") {
      std::string piece;
      if (auto e = text_block_keys(block, block_param, t.policy)) return e;
      if (auto e = read_text(block, block_param, "text", piece)) return e;
      text += (has_text ? "\n" : "") + piece;
      has_text = true;
    } else if (type == "tool_use" && role == "assistant") {
      calls.push_back(OJson());
      if (auto e = read_tool_use(block, block_param, calls.back(), t)) return e;
    } else if (type == "tool_result" && role == "user") {
      OJson message;
      if (auto e = read_tool_result(block, block_param, message, t)) return e;
      t.messages.push_back(std::move(message));
    } else if (type == "thinking" && role == "assistant") {
      std::string piece;
      if (auto e = t.policy.check_keys(block, block_param, {"type", "thinking", "signature"}, {"cache_control"}))
        return e;
      if (auto e = read_text(block, block_param, "thinking", piece)) return e;
      reasoning += piece;
    } else if (type == "redacted_thinking" && role == "assistant") {
      // Opaque to anyone but its maker: nothing to show the template.
      if (auto e = t.policy.check_keys(block, block_param, {"type", "data"}, {"cache_control"})) return e;
    } else {
      return unsupported_value(block_param + ".type", type,
                               role == "user" ? "user messages take 'text' and 'tool_result' blocks."
                                              : "assistant messages take 'text', 'thinking' and 'tool_use' blocks.");
    }
  }
  if (role == "user") {
    // Tool results alone make no user turn; text (or nothing at all) does.
    const bool only_results = !has_text && !content.empty();
    if (!only_results) t.messages.push_back({{"role", "user"}, {"content", text}});
    return std::nullopt;
  }
  OJson message = {{"role", "assistant"}, {"content", has_text ? OJson(text) : OJson(nullptr)}};
  if (!calls.empty()) message["tool_calls"] = std::move(calls);
  if (!reasoning.empty()) message["reasoning_content"] = reasoning;
  t.messages.push_back(std::move(message));
  return std::nullopt;
}

Error read_message(const OJson& m, const std::string& param, Translation& t) {
  if (!m.is_object()) return type_error(param, "an object", m);
  auto role = m.find("role");
  if (role == m.end() || role->is_null()) return fields::missing_field(param + ".role");
  if (!role->is_string()) return type_error(param + ".role", "a string", *role);
  const std::string r = role->get<std::string>();
  if (r != "user" && r != "assistant")
    return unsupported_value(param + ".role", r, "messages take the roles 'user' and 'assistant' (system is a field).");
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) return fields::missing_field(param + ".content");
  if (auto e = t.policy.check_keys(m, param, {"role", "content"})) return e;
  if (content->is_string()) {
    t.messages.push_back({{"role", r}, {"content", *content}});
    return std::nullopt;
  }
  if (!content->is_array()) return type_error(param + ".content", "a string or an array of content blocks", *content);
  return read_blocks(*content, param + ".content", r, t);
}

Error read_messages(const OJson& v, Translation& t) {
  if (!v.is_array()) return type_error("messages", "an array of messages", v);
  if (v.empty()) return invalid_request("'messages' must hold at least one message.", "messages");
  for (size_t i = 0; i < v.size(); ++i)
    if (auto e = read_message(v[i], "messages[" + std::to_string(i) + "]", t)) return e;
  return std::nullopt;
}

// tools[i]: {"name", "description", "input_schema", "strict"} (type "custom" or none);
// the server tools (web search, code execution, ...) are Anthropic's own. Ignored by
// name: cache_control, eager_input_streaming (how the input streams: as it comes here),
// defer_loading and allowed_callers (tool search and programmatic calls, which sluice
// does not run: every tool is in the prompt and called directly), input_examples.
Error read_tools(const OJson& v, OJson& out, const fields::FieldPolicy& policy) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_array()) return type_error("tools", "an array of tools", v);
  out = OJson::array();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string param = "tools[" + std::to_string(i) + "]";
    const OJson& tool = v[i];
    if (!tool.is_object()) return type_error(param, "an object", tool);
    OJson function = OJson::object();
    for (const auto& [key, value] : tool.items()) {
      const std::string field = param + "." + key;
      if (key == "type") {
        if (!value.is_null() && value != "custom") {
          return unsupported_value(field, value.is_string() ? value.get<std::string>() : value.dump(),
                                   "only client tools (type 'custom' or no type) are supported.");
        }
      } else if (key == "name" || key == "description") {
        if (!value.is_null() && !value.is_string()) return type_error(field, "a string", value);
        function[key] = value;
      } else if (key == "input_schema") {
        if (!value.is_object()) return type_error(field, "a JSON Schema object", value);
        function["parameters"] = value;
      } else if (key == "strict") {
        // The same promise as a chat function's strict: the input follows the schema.
        if (!value.is_null() && !value.is_boolean()) return type_error(field, "a boolean", value);
        if (!value.is_null()) function["strict"] = value;
      } else if (key == "cache_control" || key == "eager_input_streaming" || key == "defer_loading" ||
                 key == "allowed_callers" || key == "input_examples") {
        policy.ignore(field, value);
      } else if (auto e = policy.unknown(field)) {
        return e;
      }
    }
    if (!function.contains("name")) return fields::missing_field(param + ".name");
    if (!function.contains("parameters")) return fields::missing_field(param + ".input_schema");
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return std::nullopt;
}

// tool_choice: {"type": "auto" | "any" | "tool" (with "name") | "none",
// "disable_parallel_tool_use": bool}.
Error read_tool_choice(const OJson& v, OJson& choice, bool& parallel, const fields::FieldPolicy& policy) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return type_error("tool_choice", "an object", v);
  std::string type, name;
  if (auto e = block_type(v, "tool_choice", type)) return e;
  for (const auto& [key, value] : v.items()) {
    if (key == "type") continue;
    if (key == "name" && type == "tool") {
      if (auto e = read_text(v, "tool_choice", "name", name)) return e;
    } else if (key == "disable_parallel_tool_use") {
      if (!value.is_boolean()) return type_error("tool_choice." + key, "a boolean", value);
      parallel = !value.get<bool>();
    } else if (auto e = policy.unknown("tool_choice." + key)) {
      return e;
    }
  }
  if (type == "auto" || type == "none") {
    choice = type;
  } else if (type == "any") {
    choice = "required";
  } else if (type == "tool") {
    if (name.empty()) return fields::missing_field("tool_choice.name");
    choice = {{"type", "function"}, {"function", {{"name", name}}}};
  } else {
    return unsupported_value("tool_choice.type", type, "supported types are 'auto', 'any', 'tool' and 'none'.");
  }
  return std::nullopt;
}

// thinking: {"type": "enabled", "budget_tokens": N} | {"type": "adaptive"} |
// {"type": "disabled"}: whether the template opens the model's reasoning (the budget is
// not enforced; `display`, how the answer shows the reasoning, is ignored by name).
Error read_thinking(const OJson& v, OJson& kwargs, const fields::FieldPolicy& policy) {
  if (v.is_null()) return std::nullopt;
  std::string type;
  if (auto e = block_type(v, "thinking", type)) return e;
  for (const auto& [key, value] : v.items()) {
    if (key == "type") continue;
    if (key == "display" && type != "disabled") {
      if (!value.is_null() && !value.is_string()) return type_error("thinking.display", "a string", value);
      policy.ignore("thinking.display", value);
      continue;
    }
    if (key != "budget_tokens" || type != "enabled") {
      if (auto e = policy.unknown("thinking." + key)) return e;
      continue;
    }
    if (!value.is_number_integer() || value.get<int64_t>() < 1)
      return type_error("thinking.budget_tokens", "a positive integer", value);
  }
  if (type != "enabled" && type != "disabled" && type != "adaptive")
    return unsupported_value("thinking.type", type, "supported types are 'enabled', 'adaptive' and 'disabled'.");
  kwargs["enable_thinking"] = type != "disabled";
  return std::nullopt;
}

// output_config: {"effort": ..., "format": {"type": "json_schema", "schema": {...}}}.
// The format is the chat request's response_format (a strict json_schema: Anthropic's
// structured outputs follow the schema); effort has no meaning here (ignored by name).
Error read_output_config(const OJson& v, OJson& response_format, const fields::FieldPolicy& policy) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return type_error("output_config", "an object", v);
  for (const auto& [key, value] : v.items()) {
    const std::string field = "output_config." + key;
    if (key == "effort") {
      if (!value.is_null() && !value.is_string()) return type_error(field, "a string", value);
      policy.ignore(field, value);
    } else if (key == "format") {
      if (value.is_null()) continue;
      std::string type;
      if (auto e = block_type(value, field, type)) return e;
      if (type != "json_schema")
        return unsupported_value(field + ".type", type, "the supported type is 'json_schema'.");
      if (auto e = policy.check_keys(value, field, {"type", "schema"})) return e;
      auto schema = value.find("schema");
      if (schema == value.end() || schema->is_null()) return fields::missing_field(field + ".schema");
      if (!schema->is_object()) return type_error(field + ".schema", "a JSON Schema object", *schema);
      response_format = {{"type", "json_schema"},
                         {"json_schema", {{"name", "output"}, {"schema", *schema}, {"strict", true}}}};
    } else if (auto e = policy.unknown(field)) {
      return e;
    }
  }
  return std::nullopt;
}

// The fields the chat parser reads under the same name and meaning.
bool is_passed_through(const std::string& key) {
  return key == "model" || key == "temperature" || key == "top_p" || key == "top_k" || key == "stream";
}

}  // namespace

ApiError in_messages_terms(ApiError error) {
  auto rename = [](std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  };
  for (std::string* s : {&error.param, &error.message}) {
    rename(*s, "response_format.json_schema.", "output_config.format.");
    rename(*s, "response_format", "output_config.format");
    rename(*s, ".function.parameters", ".input_schema");
    rename(*s, ".function.", ".");
    rename(*s, "'stop'", "'stop_sequences'");
    rename(*s, "max_completion_tokens", "max_tokens");
  }
  if (error.param == "stop") error.param = "stop_sequences";
  return error;
}

MessagesParse parse_messages_request(std::string_view body, const ParseOptions& parse, bool count_tokens) {
  OJson in;
  if (auto e = fields::parse_object(body, in)) return *e;
  OJson chat = OJson::object();
  std::vector<std::string> ignored;
  const fields::FieldPolicy policy(parse.strict_fields, ignored);
  Translation t(policy);
  OJson system_message;
  OJson kwargs = OJson::object();
  bool parallel = true;
  bool has_messages = false, has_max_tokens = false;
  for (const auto& [key, value] : in.items()) {
    Error e;
    if (is_passed_through(key) && !(count_tokens && key != "model")) {
      chat[key] = value;
    } else if (key == "max_tokens" && !count_tokens) {
      if (!value.is_null()) {
        chat["max_tokens"] = value;
        has_max_tokens = true;
      }
    } else if (key == "system") {
      std::string text;
      if (!value.is_null()) e = read_text_or_blocks(value, "system", text, policy);
      if (!e && !value.is_null()) system_message = {{"role", "system"}, {"content", text}};
    } else if (key == "messages") {
      if (!value.is_null()) {
        e = read_messages(value, t);
        has_messages = true;
      }
    } else if (key == "stop_sequences" && !count_tokens) {
      chat["stop"] = value;
    } else if (key == "tools") {
      OJson tools;
      e = read_tools(value, tools, policy);
      if (!e && !tools.is_null()) chat["tools"] = std::move(tools);
    } else if (key == "tool_choice") {
      OJson choice;
      e = read_tool_choice(value, choice, parallel, policy);
      if (!e && !choice.is_null()) chat["tool_choice"] = std::move(choice);
    } else if (key == "thinking") {
      e = read_thinking(value, kwargs, policy);
    } else if (key == "output_config") {
      OJson response_format;
      e = read_output_config(value, response_format, policy);
      if (!e && !response_format.is_null()) chat["response_format"] = std::move(response_format);
    } else if (key == "cache_control" || (key == "metadata" && !count_tokens)) {
      // Prompt caching (the prefix cache needs no breakpoints); the caller's metadata.
      if (!value.is_null() && !value.is_object()) e = type_error(key, "an object", value);
      if (!e) policy.ignore(key, value);
    } else if ((key == "service_tier" || key == "container" || key == "inference_geo") && !count_tokens) {
      // Capacity tiers, code-execution containers (no such tool here), where it runs.
      if (!value.is_null() && !value.is_string()) e = type_error(key, "a string", value);
      if (!e) policy.ignore(key, value);
    } else {
      e = policy.unknown(key);
    }
    if (e) return *e;
  }
  if (!has_messages) return fields::missing_field("messages");
  if (!count_tokens && !has_max_tokens) return fields::missing_field("max_tokens");
  if (!system_message.is_null()) t.messages.insert(t.messages.begin(), std::move(system_message));
  // A final assistant message with text is a prefill: the answer continues it.
  if (!t.messages.empty() && t.messages.back().value("role", "") == "assistant" &&
      t.messages.back()["content"].is_string() && !t.messages.back()["content"].get<std::string>().empty())
    chat["continue_final_message"] = true;
  chat["messages"] = std::move(t.messages);
  if (!kwargs.empty()) chat["chat_template_kwargs"] = std::move(kwargs);
  if (!parallel) chat["parallel_tool_calls"] = false;
  if (count_tokens && !chat.contains("model")) return fields::missing_field("model");

  ChatParse parsed = parse_chat_json(chat, parse);
  if (auto* error = std::get_if<ApiError>(&parsed)) return in_messages_terms(std::move(*error));
  MessagesRequest& out = std::get<ChatRequest>(parsed);
  out.ignored_fields.insert(out.ignored_fields.end(), ignored.begin(), ignored.end());
  return std::move(out);
}

std::string anthropic_error_body(const ApiError& error) {
  const char* type = "api_error";
  switch (error.status) {
    case 400: type = "invalid_request_error"; break;
    case 401: type = "authentication_error"; break;
    case 403: type = "permission_error"; break;
    case 404: type = "not_found_error"; break;
    case 413: type = "request_too_large"; break;
    case 429: type = "rate_limit_error"; break;
    case 503: case 529: type = "overloaded_error"; break;
    default: if (error.status >= 400 && error.status < 500) type = "invalid_request_error";
  }
  const OJson body = {{"type", "error"}, {"error", {{"type", type}, {"message", error.message}}}};
  return body.dump(-1, ' ', false, OJson::error_handler_t::replace);
}

}  // namespace sluice::proto
