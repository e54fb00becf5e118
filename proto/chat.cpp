#include "proto/chat.h"

#include <limits>
#include <set>

#include "proto/tools.h"

namespace sluice::proto {

using fields::Error;
using fields::Json;

namespace {

constexpr int32_t kMaxTopLogprobs = 20;

Error read_content(const Json& v, const std::string& param, std::string& out, const fields::FieldPolicy& policy) {
  if (v.is_string()) {
    out = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return fields::type_error(param, "a string or an array of content parts", v);
  std::string joined;
  for (size_t j = 0; j < v.size(); ++j) {
    const Json& part = v[j];
    std::string part_param = param + "[" + std::to_string(j) + "]";
    if (!part.is_object()) return fields::type_error(part_param, "an object", part);
    auto type = part.find("type");
    if (type == part.end() || type->is_null()) return fields::missing_field(part_param + ".type");
    if (!type->is_string()) return fields::type_error(part_param + ".type", "a string", *type);
    if (*type != "text") {
      return invalid_request("Content parts of type '" + type->get<std::string>() +
                                 "' are not supported; only 'text' is.",
                             part_param + ".type");
    }
    // prompt_cache_breakpoint: OpenAI's explicit prompt caching; the prefix cache needs no marks.
    if (auto e = policy.check_keys(part, part_param, {"type", "text"}, {"prompt_cache_breakpoint"})) return e;
    auto text = part.find("text");
    if (text == part.end()) return fields::missing_field(part_param + ".text");
    if (!text->is_string()) return fields::type_error(part_param + ".text", "a string", *text);
    if (j > 0) joined += '\n';
    joined += text->get_ref<const std::string&>();
  }
  out = std::move(joined);
  return std::nullopt;
}

// messages[i].tool_calls[j].function: {"name", "arguments"}; also the legacy
// function_call of an assistant message.
Error read_call_function(const Json& f, const std::string& param, ChatToolCall& out,
                         const fields::FieldPolicy& policy) {
  if (!f.is_object()) return fields::type_error(param, "an object", f);
  bool has_name = false, has_arguments = false;
  for (const auto& [key, value] : f.items()) {
    std::string field = param + "." + key;
    Error e;
    if (key == "name") {
      e = fields::read_string(value, field, out.name);
      has_name = !value.is_null();
    } else if (key == "arguments") {
      // The JSON text as the model wrote it (OpenAI refuses an object here too).
      e = fields::read_string(value, field, out.arguments);
      has_arguments = !value.is_null();
    } else {
      e = policy.unknown(field);
    }
    if (e) return e;
  }
  if (!has_name) return fields::missing_field(param + ".name");
  if (!has_arguments) return fields::missing_field(param + ".arguments");
  return std::nullopt;
}

// messages[i].tool_calls[j]: {"id", "type": "function", "function": {...}}.
Error read_tool_call(const Json& call, const std::string& param, ChatToolCall& out, const fields::FieldPolicy& policy) {
  if (!call.is_object()) return fields::type_error(param, "an object", call);
  bool has_function = false;
  for (const auto& [key, value] : call.items()) {
    std::string field = param + "." + key;
    Error e;
    if (key == "id") {
      e = fields::read_string(value, field, out.id);
    } else if (key == "index") {
      // Clients that rebuild the call from stream deltas keep the delta's index.
      int64_t ignored = 0;
      e = fields::read_int(value, field, 0, std::numeric_limits<int32_t>::max(), ignored);
    } else if (key == "type") {
      if (!value.is_null() && !value.is_string()) {
        e = fields::type_error(field, "a string", value);
      } else if (!value.is_null() && value != "function") {
        e = invalid_request("Invalid value for '" + field + "': '" + value.get<std::string>() +
                                "'; only 'function' is supported.",
                            field);
      }
    } else if (key == "function") {
      if (value.is_null()) continue;
      e = read_call_function(value, field, out, policy);
      has_function = true;
    } else {
      e = policy.unknown(field);
    }
    if (e) return e;
  }
  if (!has_function) return fields::missing_field(param + ".function");
  return std::nullopt;
}

Error read_tool_calls(const Json& v, const std::string& param, std::vector<ChatToolCall>& out,
                      const fields::FieldPolicy& policy) {
  if (!v.is_array()) return fields::type_error(param, "an array of tool calls", v);
  std::vector<ChatToolCall> calls(v.size());
  for (size_t j = 0; j < v.size(); ++j) {
    if (auto e = read_tool_call(v[j], param + "[" + std::to_string(j) + "]", calls[j], policy)) return e;
  }
  out = std::move(calls);
  return std::nullopt;
}

ApiError only_on(const std::string& field, const char* role) {
  return fields::unsupported(field, std::string("is only allowed on messages with role '") + role + "'.");
}

// The message fields only one role may carry (when not null). `legacy_function`: the
// message came with the legacy role "function" (now "tool"), which has no call id.
Error read_role_field(const std::string& key, const Json& value, const std::string& field, bool legacy_function,
                      ChatMessage& out, bool& handled, const fields::FieldPolicy& policy) {
  handled = true;
  if (key == "tool_call_id") {
    if (value.is_null()) return std::nullopt;
    if (out.role != "tool" || legacy_function) return only_on(field, "tool");
    return fields::read_opt_string(value, field, out.tool_call_id);
  }
  if (key == "tool_calls") {
    // Round-tripped messages of any role may carry null or [].
    if (value.is_null() || (value.is_array() && value.empty())) return std::nullopt;
    if (out.role != "assistant") return only_on(field, "assistant");
    if (!out.tool_calls.empty()) {
      return fields::unsupported(field, "and the legacy 'function_call' must not both be sent.");
    }
    return read_tool_calls(value, field, out.tool_calls, policy);
  }
  if (key == "function_call") {
    if (value.is_null()) return std::nullopt;
    if (out.role != "assistant") return only_on(field, "assistant");
    if (!out.tool_calls.empty()) return fields::unsupported(field, "and 'tool_calls' must not both be sent.");
    out.tool_calls.emplace_back();
    return read_call_function(value, field, out.tool_calls.back(), policy);
  }
  if (key == "reasoning_content" || key == "reasoning") {
    if (value.is_null()) return std::nullopt;
    if (out.role != "assistant") return only_on(field, "assistant");
    std::optional<std::string> text;
    if (auto e = fields::read_opt_string(value, field, text)) return e;
    if (out.reasoning && *out.reasoning != *text) {
      return fields::unsupported(field, "differs from the message's other reasoning field; send one of them.");
    }
    out.reasoning = std::move(text);
    return std::nullopt;
  }
  handled = false;
  return std::nullopt;
}

Error read_message(const Json& m, const std::string& param, ChatMessage& out, const fields::FieldPolicy& policy) {
  if (!m.is_object()) return fields::type_error(param, "an object", m);
  auto role = m.find("role");
  if (role == m.end() || role->is_null()) return fields::missing_field(param + ".role");
  if (!role->is_string()) return fields::type_error(param + ".role", "a string", *role);
  std::string r = role->get<std::string>();
  if (r == "developer") r = "system";
  const bool legacy_function = r == "function";
  if (legacy_function) r = "tool";
  if (r != "system" && r != "user" && r != "assistant" && r != "tool") {
    return invalid_request("Invalid value for '" + param + ".role': '" + role->get<std::string>() +
                               "'; supported roles are system, developer, user, assistant, tool and function.",
                           param + ".role");
  }
  out.role = r;
  bool has_content = false;
  for (const auto& [key, value] : m.items()) {
    std::string field = param + "." + key;
    if (key == "role") continue;
    bool handled = false;
    if (auto e = read_role_field(key, value, field, legacy_function, out, handled, policy)) return e;
    if (handled) continue;
    if (key == "content") {
      if (value.is_null()) continue;
      if (auto e = read_content(value, field, out.content, policy)) return e;
      has_content = true;
    } else if (key == "name") {
      if (auto e = fields::read_opt_string(value, field, out.name)) return e;
    } else if (key == "refusal" || key == "audio") {
      // Round-tripped assistant messages carry these as null; anything else asks for
      // a feature we do not have.
      bool nothing = value.is_null() || (value.is_array() && value.empty());
      if (!nothing) return fields::unsupported(field, "is not supported.");
    } else if (key == "annotations") {
      // The url citations of an OpenAI answer sent back with it: nothing for the template.
      policy.ignore(field, value);
    } else if (auto e = policy.unknown(field)) {
      return e;
    }
  }
  // An assistant turn may be empty (OpenAI allows null content there, and a turn that
  // only calls tools has none); others may not.
  if (!has_content && r != "assistant") return fields::missing_field(param + ".content");
  out.content_null = r == "assistant" && !has_content;
  if (legacy_function && !out.name) return fields::missing_field(param + ".name");
  if (r == "tool" && !legacy_function && !out.tool_call_id) return fields::missing_field(param + ".tool_call_id");
  return std::nullopt;
}

// OpenAI fields that ask for nothing sluice does differently (storage, billing,
// latency hints, reasoning of models that have none): type-checked, then ignored.
Error read_ignored_openai_field(const std::string& key, const Json& v, ChatRequest& req, bool& handled) {
  handled = true;
  Error e;
  if (key == "store") {
    bool ignored = false;
    e = fields::read_bool(v, key, ignored);
  } else if (key == "metadata" || key == "prediction") {
    if (!v.is_null() && !v.is_object()) e = fields::type_error(key, "an object", v);
  } else if (key == "service_tier" || key == "reasoning_effort" || key == "verbosity" ||
             key == "prompt_cache_key" || key == "safety_identifier") {
    std::optional<std::string> ignored;
    e = fields::read_opt_string(v, key, ignored);
  } else if (key == "modalities") {
    // Only text comes out of sluice: ["text"] asks for what it does anyway.
    if (!v.is_null()) {
      if (!v.is_array()) return fields::type_error(key, "an array of strings", v);
      for (const auto& m : v) {
        if (!m.is_string()) return fields::type_error(key, "an array of strings", v);
        if (m != "text") return fields::unsupported(key, "may only ask for \"text\" output.");
      }
    }
  } else {
    handled = false;
    return std::nullopt;
  }
  if (!e && !v.is_null()) req.ignored_fields.push_back(key);
  return e;
}


}  // namespace

Error read_chat_template_kwargs(const Json& v, Json& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return fields::type_error("chat_template_kwargs", "an object", v);
  // The conversation reaches the template only through the validated request fields:
  // a variable of the same name would replace it unchecked.
  for (const char* reserved : {"messages", "tools"}) {
    if (v.contains(reserved)) {
      return invalid_request(std::string("'chat_template_kwargs' must not set '") + reserved +
                                 "': send it as the request's own field.",
                             "chat_template_kwargs");
    }
  }
  out = v;
  return std::nullopt;
}

Error resolve_continuation(const std::vector<ChatMessage>& messages, bool continue_final_message,
                           std::optional<bool> add_generation_prompt, bool& resolved) {
  resolved = add_generation_prompt.value_or(!continue_final_message);
  if (!continue_final_message) return std::nullopt;
  if (resolved) {
    return invalid_request("'continue_final_message' and 'add_generation_prompt' cannot both be true.",
                           "continue_final_message");
  }
  if (messages.empty() || messages.back().role != "assistant") {
    return invalid_request("'continue_final_message' needs the last message to be an assistant message.",
                           "messages");
  }
  return std::nullopt;
}

Error parse_chat_messages(const Json& value, const std::string& param, std::vector<ChatMessage>& out,
                          const fields::FieldPolicy& policy) {
  if (!value.is_array()) return fields::type_error(param, "an array of messages", value);
  if (value.empty()) return invalid_request("'" + param + "' must hold at least one message.", param);
  std::vector<ChatMessage> messages(value.size());
  std::set<std::string> call_ids;  // of the tool calls the assistant messages so far made
  for (size_t i = 0; i < value.size(); ++i) {
    std::string message_param = param + "[" + std::to_string(i) + "]";
    ChatMessage& message = messages[i];
    if (auto e = read_message(value[i], message_param, message, policy)) return e;
    for (const auto& call : message.tool_calls) {
      if (!call.id.empty()) call_ids.insert(call.id);
    }
    if (message.tool_call_id && !call_ids.contains(*message.tool_call_id)) {
      std::string id_param = message_param + ".tool_call_id";
      return invalid_request("Invalid value for '" + id_param + "': '" + *message.tool_call_id +
                                 "' answers no tool call of an earlier assistant message.",
                             id_param);
    }
  }
  out = std::move(messages);
  return std::nullopt;
}

ChatParse parse_chat_json(const Json& body, const ParseOptions& parse) {
  if (!body.is_object()) return invalid_request("The request body must be a JSON object.");
  ChatRequest req;
  const fields::FieldPolicy policy(parse.strict_fields, req.ignored_fields);
  std::optional<int32_t> max_tokens, max_completion_tokens, top_logprobs;
  bool logprobs = false;
  bool has_messages = false;
  std::optional<bool> add_generation_prompt;
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  for (const auto& [key, value] : body.items()) {
    bool handled = false;
    if (auto e = apply_generation_field(key, value, req, handled, parse)) return *e;
    if (handled) continue;
    if (auto e = read_ignored_openai_field(key, value, req, handled)) return *e;
    if (handled) continue;
    Error e;
    if (key == "messages") {
      if (!value.is_null()) {
        e = parse_chat_messages(value, key, req.messages, policy);
        has_messages = true;
      }
    } else if (key == "max_tokens") {
      e = fields::read_opt_int32(value, key, 1, kInt32Max, max_tokens);
    } else if (key == "max_completion_tokens") {
      e = fields::read_opt_int32(value, key, 1, kInt32Max, max_completion_tokens);
    } else if (key == "logprobs") {
      e = fields::read_bool(value, key, logprobs);
    } else if (key == "top_logprobs") {
      e = fields::read_opt_int32(value, key, 0, kMaxTopLogprobs, top_logprobs);
    } else if (is_tool_field(key)) {
      // Read below, once every key is known: the choice is checked against the tools.
    } else if (key == "parallel_tool_calls") {
      e = fields::read_bool(value, key, req.parallel_tool_calls);
    } else if (key == "include_reasoning") {
      e = fields::read_bool(value, key, req.include_reasoning);
    } else if (key == "chat_template_kwargs") {
      e = read_chat_template_kwargs(value, req.chat_template_kwargs);
    } else if (key == "add_generation_prompt") {
      bool flag = true;
      e = fields::read_bool(value, key, flag);
      if (!value.is_null()) add_generation_prompt = flag;
    } else if (key == "continue_final_message") {
      e = fields::read_bool(value, key, req.continue_final_message);
    } else if (key == "audio" || key == "web_search_options") {
      if (!value.is_null()) e = fields::unsupported(key, "is not supported.");
    } else {
      e = policy.unknown(key);
    }
    if (e) return *e;
  }
  if (auto e = check_generation_options(body, req)) return *e;
  if (!has_messages) return fields::missing_field("messages");
  if (auto e = parse_chat_tools(body, req.tools, req.tool_choice, policy)) return *e;
  if (auto e = resolve_continuation(req.messages, req.continue_final_message, add_generation_prompt,
                                    req.add_generation_prompt))
    return *e;
  if (max_tokens && max_completion_tokens && *max_tokens != *max_completion_tokens) {
    return invalid_request(
        "'max_tokens' and 'max_completion_tokens' disagree; send only 'max_completion_tokens'.",
        "max_completion_tokens");
  }
  req.sampling.max_tokens = max_completion_tokens ? max_completion_tokens : max_tokens;
  req.given.max_tokens = req.sampling.max_tokens.has_value();  // else the model's default
  if (top_logprobs && !logprobs) {
    return invalid_request("'top_logprobs' requires 'logprobs' to be true.", "top_logprobs");
  }
  if (logprobs) req.sampling.logprobs = top_logprobs.value_or(0);
  return req;
}

ChatParse parse_chat_request(std::string_view body, const ParseOptions& parse) {
  Json json;
  if (auto e = fields::parse_object(body, json)) return *e;
  return parse_chat_json(json, parse);
}

}  // namespace sluice::proto
