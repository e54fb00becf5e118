// The Responses API request mapped onto a chat-completions request (responses_api.h).
#include "proto/responses_api.h"

#include <limits>
#include <utility>

#include "proto/fields.h"

namespace sluice::proto {
namespace {

using OJson = nlohmann::ordered_json;
using Error = std::optional<ApiError>;

ApiError wrong_type(const std::string& param, std::string_view expected, const OJson& got) {
  return fields::type_error(param, expected, got);
}

Error read_string(const OJson& v, const std::string& param, std::string& out) {
  if (!v.is_string()) return wrong_type(param, "a string", v);
  out = v.get<std::string>();
  return std::nullopt;
}

Error read_bool(const OJson& v, const std::string& param, bool& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_boolean()) return wrong_type(param, "a boolean", v);
  out = v.get<bool>();
  return std::nullopt;
}

std::string at(const std::string& param, size_t i) { return param + "[" + std::to_string(i) + "]"; }

// --- input ---

// A message's content: a string, or parts of type input_text (output_text when an
// earlier response's message is sent back) as chat text parts. Ignored by name: an
// output_text's annotations and logprobs, a part's prompt_cache_breakpoint.
Error read_content(const OJson& v, const std::string& param, OJson& out, const fields::FieldPolicy& policy) {
  if (v.is_string()) {
    out = v;
    return std::nullopt;
  }
  if (!v.is_array()) return wrong_type(param, "a string or an array of content parts", v);
  out = OJson::array();
  for (size_t j = 0; j < v.size(); ++j) {
    const OJson& part = v[j];
    const std::string part_param = at(param, j);
    if (!part.is_object()) return wrong_type(part_param, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || !type->is_string()) return fields::missing_field(part_param + ".type");
    const std::string kind = type->get<std::string>();
    if (kind != "input_text" && kind != "output_text") {
      return invalid_request("Content parts of type '" + kind +
                                 "' are not supported; only 'input_text' (and 'output_text' of an earlier "
                                 "response) are.",
                             part_param + ".type");
    }
    if (auto e = policy.check_keys(part, part_param, {"type", "text"},
                                   {"annotations", "logprobs", "prompt_cache_breakpoint"}))
      return e;
    auto text = part.find("text");
    if (text == part.end()) return fields::missing_field(part_param + ".text");
    std::string value;
    if (auto e = read_string(*text, part_param + ".text", value)) return e;
    out.push_back({{"type", "text"}, {"text", std::move(value)}});
  }
  return std::nullopt;
}

// {role, content} (type "message" or none): an earlier response's message item may
// carry its id, status and phase too (ignored by name).
Error read_message_item(const OJson& item, const std::string& param, OJson& messages,
                        const fields::FieldPolicy& policy) {
  std::string role;
  auto r = item.find("role");
  if (r == item.end()) return fields::missing_field(param + ".role");
  if (auto e = read_string(*r, param + ".role", role)) return e;
  if (role == "developer") role = "system";
  if (role != "user" && role != "system" && role != "assistant") {
    return invalid_request("Invalid value for '" + param + ".role': '" + r->get<std::string>() +
                               "'; expected 'user', 'assistant', 'system' or 'developer'.",
                           param + ".role");
  }
  if (auto e = policy.check_keys(item, param, {"role", "type", "content"}, {"id", "status", "phase"})) return e;
  OJson content;
  if (auto c = item.find("content"); c != item.end()) {
    if (auto e = read_content(*c, param + ".content", content, policy)) return e;
  }
  if (content.is_null()) return fields::missing_field(param + ".content");
  messages.push_back({{"role", role}, {"content", std::move(content)}});
  return std::nullopt;
}

// Reads the string fields `names` of an item (all required) into `out`, in order.
Error read_item_strings(const OJson& item, const std::string& param, std::initializer_list<const char*> names,
                        std::vector<std::string>& out) {
  for (const char* name : names) {
    auto found = item.find(name);
    if (found == item.end() || found->is_null()) return fields::missing_field(param + "." + name);
    out.emplace_back();
    if (auto e = read_string(*found, param + "." + name, out.back())) return e;
  }
  return std::nullopt;
}

// A function_call item joins the assistant message before it (a turn that wrote text
// and called, or called several functions), else starts one. Ignored by name: an
// earlier response's id and status, the caller (direct or a program's) and namespace.
Error read_function_call_item(const OJson& item, const std::string& param, OJson& messages,
                              const fields::FieldPolicy& policy) {
  if (auto e = policy.check_keys(item, param, {"type", "call_id", "name", "arguments"},
                                 {"id", "status", "caller", "namespace"}))
    return e;
  std::vector<std::string> values;
  if (auto e = read_item_strings(item, param, {"call_id", "name", "arguments"}, values)) return e;
  OJson call = {{"id", values[0]}, {"type", "function"}, {"function", {{"name", values[1]}, {"arguments", values[2]}}}};
  if (messages.empty() || messages.back()["role"] != "assistant") {
    messages.push_back({{"role", "assistant"}, {"content", nullptr}});
  }
  OJson& message = messages.back();
  if (!message.contains("tool_calls")) message["tool_calls"] = OJson::array();
  message["tool_calls"].push_back(std::move(call));
  return std::nullopt;
}

// function_call_output: {call_id, output} with output a string or input_text parts
// (id, status, caller, name and namespace ignored by name: the call_id says which call).
Error read_function_call_output_item(const OJson& item, const std::string& param, OJson& messages,
                                     const fields::FieldPolicy& policy) {
  if (auto e = policy.check_keys(item, param, {"type", "call_id", "output"},
                                 {"id", "status", "caller", "name", "namespace"}))
    return e;
  auto call_id = item.find("call_id");
  if (call_id == item.end() || call_id->is_null()) return fields::missing_field(param + ".call_id");
  std::string id;
  if (auto e = read_string(*call_id, param + ".call_id", id)) return e;
  auto output = item.find("output");
  if (output == item.end() || output->is_null()) return fields::missing_field(param + ".output");
  OJson content;
  if (auto e = read_content(*output, param + ".output", content, policy)) return e;
  messages.push_back({{"role", "tool"}, {"tool_call_id", std::move(id)}, {"content", std::move(content)}});
  return std::nullopt;
}

Error read_input(const OJson& v, OJson& messages, const fields::FieldPolicy& policy) {
  const std::string param = "input";
  if (v.is_string()) {
    messages.push_back({{"role", "user"}, {"content", v}});
    return std::nullopt;
  }
  if (!v.is_array()) return wrong_type(param, "a string or an array of input items", v);
  if (v.empty()) return invalid_request("'input' must hold at least one item.", param);
  for (size_t i = 0; i < v.size(); ++i) {
    const OJson& item = v[i];
    const std::string item_param = at(param, i);
    if (!item.is_object()) return wrong_type(item_param, "an object", item);
    std::string type = "message";
    if (auto t = item.find("type"); t != item.end() && !t->is_null()) {
      if (auto e = read_string(*t, item_param + ".type", type)) return e;
    }
    Error e;
    if (type == "message") {
      e = read_message_item(item, item_param, messages, policy);
    } else if (type == "function_call") {
      e = read_function_call_item(item, item_param, messages, policy);
    } else if (type == "function_call_output") {
      e = read_function_call_output_item(item, item_param, messages, policy);
    } else if (type == "reasoning") {
      // An earlier response's reasoning sent back: chat templates drop past
      // reasoning, so it asks for nothing.
    } else {
      e = invalid_request("Input items of type '" + type +
                              "' are not supported; only 'message', 'function_call', 'function_call_output' "
                              "and 'reasoning' are.",
                          item_param + ".type");
    }
    if (e) return e;
  }
  return std::nullopt;
}

// --- tools, tool_choice, text ---

// Flat function tools ({type, name, description, parameters, strict}) in the chat
// form ({type, function: {...}}), in the client's key order. Ignored by name:
// defer_loading and allowed_callers (tool search and programmatic calls, which sluice
// does not run: every tool is in the prompt and called directly), output_schema.
Error read_tools(const OJson& v, OJson& out, const fields::FieldPolicy& policy) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_array()) return wrong_type("tools", "an array of tools", v);
  out = OJson::array();
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string param = at("tools", i);
    const OJson& tool = v[i];
    if (!tool.is_object()) return wrong_type(param, "an object", tool);
    auto type = tool.find("type");
    if (type == tool.end() || type->is_null()) return fields::missing_field(param + ".type");
    std::string kind;
    if (auto e = read_string(*type, param + ".type", kind)) return e;
    if (kind != "function") {
      return invalid_request("Tools of type '" + kind +
                                 "' are not supported: sluice runs no hosted tools (web search, file search, "
                                 "computer use, ...); only 'function' tools are.",
                             param + ".type");
    }
    if (auto e = policy.check_keys(tool, param, {"type", "name", "description", "parameters", "strict"},
                                   {"defer_loading", "allowed_callers", "output_schema"}))
      return e;
    OJson function = OJson::object();
    for (const auto& [key, value] : tool.items()) {
      const bool known = key == "name" || key == "description" || key == "parameters" || key == "strict";
      if (known && !value.is_null()) function[key] = value;
    }
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return std::nullopt;
}

// "none" | "auto" | "required" | {type: "function", name}.
Error read_tool_choice(const OJson& v, OJson& out, const fields::FieldPolicy& policy) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) {
    out = v;  // the chat parser checks the value
    return std::nullopt;
  }
  if (!v.is_object()) return wrong_type("tool_choice", "a string or an object", v);
  auto type = v.find("type");
  if (type == v.end() || !type->is_string()) return fields::missing_field("tool_choice.type");
  if (*type != "function") {
    return invalid_request("Invalid value for 'tool_choice.type': '" + type->get<std::string>() +
                               "'; only 'function' (with a name) is supported.",
                           "tool_choice.type");
  }
  if (auto e = policy.check_keys(v, "tool_choice", {"type", "name"})) return e;
  std::string name;
  if (auto n = v.find("name"); n != v.end()) {
    if (auto e = read_string(*n, "tool_choice.name", name)) return e;
  }
  if (name.empty()) return fields::missing_field("tool_choice.name");
  out = {{"type", "function"}, {"function", {{"name", name}}}};
  return std::nullopt;
}

// text: {format: {type: text | json_object | json_schema, name, schema, strict,
// description}, verbosity}. Sets `response_format` (null for text).
Error read_text(const OJson& v, OJson& response_format, OJson& echo, const fields::FieldPolicy& policy) {
  echo = {{"format", {{"type", "text"}}}};
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return wrong_type("text", "an object", v);
  for (const auto& [key, value] : v.items()) {
    if (key == "verbosity") {
      if (!value.is_null() && !value.is_string()) return wrong_type("text.verbosity", "a string", value);
      if (!value.is_null()) echo["verbosity"] = value;
      continue;
    }
    if (key != "format") {
      if (auto e = policy.unknown("text." + key)) return e;
      continue;
    }
    if (value.is_null()) continue;
    if (!value.is_object()) return wrong_type("text.format", "an object", value);
    auto type = value.find("type");
    if (type == value.end() || !type->is_string()) return fields::missing_field("text.format.type");
    const std::string kind = type->get<std::string>();
    echo["format"] = value;
    if (kind == "text" || kind == "json_object") {
      if (auto e = policy.check_keys(value, "text.format", {"type"})) return e;
      if (kind == "json_object") response_format = {{"type", "json_object"}};
      continue;
    }
    if (kind != "json_schema") {
      return invalid_request("Invalid value for 'text.format.type': '" + kind +
                                 "'; expected 'text', 'json_object' or 'json_schema'.",
                             "text.format.type");
    }
    if (auto e = policy.check_keys(value, "text.format", {"type", "name", "schema", "strict", "description"}))
      return e;
    OJson schema = OJson::object();
    for (const auto& [k, field] : value.items()) {
      if (k == "name" || k == "schema" || k == "strict" || k == "description") schema[k] = field;
    }
    if (!schema.contains("schema")) return fields::missing_field("text.format.schema");
    if (!schema.contains("name")) return fields::missing_field("text.format.name");
    response_format = {{"type", "json_schema"}, {"json_schema", std::move(schema)}};
  }
  return std::nullopt;
}

// reasoning: {effort, summary, generate_summary}: accepted (the model reasons as its
// template says) and repeated in the response; context and mode ignored by name.
Error read_reasoning(const OJson& v, OJson& echo, const fields::FieldPolicy& policy) {
  echo = {{"effort", nullptr}, {"summary", nullptr}};
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return wrong_type("reasoning", "an object", v);
  if (auto e = policy.check_keys(v, "reasoning", {"effort", "summary", "generate_summary"}, {"context", "mode"}))
    return e;
  for (const auto& [key, value] : v.items()) {
    const bool known = key == "effort" || key == "summary" || key == "generate_summary";
    if (!known) continue;
    if (!value.is_null() && !value.is_string()) return wrong_type("reasoning." + key, "a string", value);
    if (key != "generate_summary") echo[key] = value;
  }
  return std::nullopt;
}

Error read_metadata(const OJson& v, OJson& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return wrong_type("metadata", "an object", v);
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) return wrong_type("metadata." + key, "a string", value);
  }
  out = v;
  return std::nullopt;
}

// Fields that ask for nothing sluice does differently: type-checked loosely, ignored.
bool is_ignored_field(const std::string& key) {
  return key == "include" || key == "service_tier" || key == "prompt_cache_key" || key == "safety_identifier" ||
         key == "stream_options" || key == "max_tool_calls" || key == "top_logprobs" || key == "prompt_cache_retention";
}

// Fields asking for features sluice does not have.
bool is_refused_field(const std::string& key) {
  return key == "conversation" || key == "prompt" || key == "context_management";
}

// Sets the chat field `key` from a Responses field `param`, as sent (the chat parser
// checks type and range; its errors are renamed back).
void pass(const OJson& body, const char* param, const char* key, OJson& chat) {
  auto found = body.find(param);
  if (found != body.end() && !found->is_null()) chat[key] = *found;
}

Error apply_field(const std::string& key, const OJson& value, ResponsesRequest& req, OJson& response_format,
                  const fields::FieldPolicy& policy) {
  OJson& echo = req.echo;
  if (key == "model") return read_string(value, key, req.model);
  if (key == "input") return read_input(value, req.input_messages, policy);
  if (key == "instructions") {
    if (value.is_null()) return std::nullopt;
    std::string text;
    if (auto e = read_string(value, key, text)) return e;
    req.instructions = text;
    echo["instructions"] = text;
    return std::nullopt;
  }
  if (key == "stream") return read_bool(value, key, req.stream);
  if (key == "store") return read_bool(value, key, req.store);
  if (key == "previous_response_id") {
    if (value.is_null()) return std::nullopt;
    std::string id;
    if (auto e = read_string(value, key, id)) return e;
    req.previous_response_id = id;
    return std::nullopt;
  }
  if (key == "background") {
    bool background = false;
    if (auto e = read_bool(value, key, background)) return e;
    if (background) return fields::unsupported(key, "mode is not supported: send the request without it.");
    return std::nullopt;
  }
  if (key == "truncation") {
    if (value.is_null()) return std::nullopt;
    std::string mode;
    if (auto e = read_string(value, key, mode)) return e;
    if (mode != "disabled" && mode != "auto")
      return invalid_request("Invalid value for 'truncation': '" + mode + "'; expected 'auto' or 'disabled'.", key);
    echo["truncation"] = mode;
    return std::nullopt;
  }
  if (key == "parallel_tool_calls") {
    bool parallel = true;
    if (auto e = read_bool(value, key, parallel)) return e;
    echo["parallel_tool_calls"] = parallel;
    return std::nullopt;
  }
  if (key == "tools") return read_tools(value, req.chat_fields["tools"], policy);
  if (key == "tool_choice") return read_tool_choice(value, req.chat_fields["tool_choice"], policy);
  if (key == "text") return read_text(value, response_format, echo["text"], policy);
  if (key == "reasoning") return read_reasoning(value, echo["reasoning"], policy);
  if (key == "metadata") return read_metadata(value, echo["metadata"]);
  if (key == "user") {
    if (value.is_null()) return std::nullopt;
    std::string user;
    if (auto e = read_string(value, key, user)) return e;
    echo["user"] = user;
    return std::nullopt;
  }
  if (key == "max_output_tokens" || key == "temperature" || key == "top_p") return std::nullopt;  // passed below
  if (is_refused_field(key)) {
    if (value.is_null()) return std::nullopt;
    return fields::unsupported(key, "is not supported.");
  }
  if (is_ignored_field(key)) {
    policy.ignore(key, value);
    return std::nullopt;
  }
  return policy.unknown(key);
}

// The response object's copy of the request, with OpenAI's defaults.
OJson default_echo() {
  return {{"instructions", nullptr},  {"max_output_tokens", nullptr}, {"metadata", OJson::object()},
          {"parallel_tool_calls", true}, {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
          {"temperature", 1.0},       {"text", {{"format", {{"type", "text"}}}}},
          {"tool_choice", "auto"},    {"tools", OJson::array()},
          {"top_p", 1.0},             {"truncation", "disabled"},
          {"user", nullptr}};
}

// The chat parser's field names, as the Responses request spells them.
std::string renamed(std::string text) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"max_completion_tokens", "max_output_tokens"},
      {"response_format.json_schema.", "text.format."},
      {"response_format", "text.format"},
      {".function.", "."},
      {"tool_choice.function", "tool_choice"},
      {"messages", "input"},
  };
  for (const auto& [from, to] : kNames) {
    for (size_t pos = text.find(from); pos != std::string::npos;
         pos = text.find(from, pos + std::string_view(to).size()))
      text.replace(pos, std::string_view(from).size(), to);
  }
  return text;
}

}  // namespace

ResponsesParse parse_responses_request(std::string_view body, const ParseOptions& parse) {
  OJson document;
  if (auto e = fields::parse_object(body, document)) return *e;
  ResponsesRequest req;
  const fields::FieldPolicy policy(parse.strict_fields, req.ignored_fields);
  req.echo = default_echo();
  OJson response_format;
  bool has_input = false;
  for (const auto& [key, value] : document.items()) {
    if (key == "input" && !value.is_null()) has_input = true;
    if (key == "input" && value.is_null()) continue;
    if (auto e = apply_field(key, value, req, response_format, policy)) return *e;
  }
  if (req.model.empty()) return fields::missing_field("model");
  if (!has_input) return fields::missing_field("input");
  OJson& chat = req.chat_fields;
  chat["model"] = req.model;
  pass(document, "max_output_tokens", "max_completion_tokens", chat);
  pass(document, "temperature", "temperature", chat);
  pass(document, "top_p", "top_p", chat);
  for (const char* key : {"max_output_tokens", "temperature", "top_p"}) pass(document, key, key, req.echo);
  if (chat.contains("tools") && chat["tools"].is_null()) chat.erase("tools");
  if (chat.contains("tool_choice") && chat["tool_choice"].is_null()) chat.erase("tool_choice");
  if (chat.contains("tools")) {
    OJson flat = OJson::array();  // the tools as sent (flat)
    for (const OJson& tool : chat["tools"]) {
      OJson one = {{"type", "function"}};
      for (const auto& [k, v] : tool["function"].items()) one[k] = v;
      if (!one.contains("strict")) one["strict"] = nullptr;
      flat.push_back(std::move(one));
    }
    req.echo["tools"] = std::move(flat);
  }
  if (auto found = document.find("tool_choice"); found != document.end() && !found->is_null())
    req.echo["tool_choice"] = *found;
  if (!response_format.is_null()) chat["response_format"] = std::move(response_format);
  chat["parallel_tool_calls"] = req.echo["parallel_tool_calls"];
  if (req.stream) chat["stream"] = true;
  if (req.echo["user"].is_string()) chat["user"] = req.echo["user"];
  req.echo["store"] = req.store;
  req.echo["previous_response_id"] = req.previous_response_id ? OJson(*req.previous_response_id) : OJson(nullptr);
  return req;
}

std::variant<ChatRequest, ApiError> to_chat_request(const ResponsesRequest& request, const nlohmann::ordered_json& history,
                                                      const ParseOptions& parse) {
  OJson body = request.chat_fields;
  OJson messages = OJson::array();
  if (request.instructions) messages.push_back({{"role", "system"}, {"content", *request.instructions}});
  for (const OJson& message : history) messages.push_back(message);
  for (const OJson& message : request.input_messages) messages.push_back(message);
  body["messages"] = std::move(messages);
  ChatParse parsed = parse_chat_json(body, parse);  // a copy of the parsed body's DOM: no second parse
  if (auto* error = std::get_if<ApiError>(&parsed)) return in_responses_terms(*error);
  ChatRequest& out = std::get<ChatRequest>(parsed);
  for (const std::string& field : request.ignored_fields) out.ignored_fields.push_back(field);
  return std::move(out);
}

ApiError in_responses_terms(ApiError error) {
  error.param = renamed(error.param);
  error.message = renamed(error.message);
  return error;
}

ApiError previous_response_not_found(const std::string& id) {
  return {404, "Previous response with id '" + id + "' not found.", "invalid_request_error", "previous_response_id",
          "previous_response_not_found"};
}

ApiError response_not_found(const std::string& id) {
  return {404, "Response with id '" + id + "' not found.", "invalid_request_error", "", "not_found"};
}

}  // namespace sluice::proto
