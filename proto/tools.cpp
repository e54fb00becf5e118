#include "proto/tools.h"

#include <map>
#include <optional>

namespace sluice::proto {

using fields::Error;
using fields::Json;

namespace {

// Which wire form the tools came in: the current `tools` or the legacy `functions`.
struct ToolForm {
  const char* key;          // "tools" | "functions"
  const char* name_suffix;  // where the name sits inside one entry
  bool legacy;              // entries are bare function definitions
};
constexpr ToolForm kTools{"tools", ".function.name", false};
constexpr ToolForm kFunctions{"functions", ".name", true};

// A name as it reads in an error message, kept short (a bad name may be any length).
std::string shown_name(const std::string& name) {
  return name.size() > 80 ? name.substr(0, 77) + "..." : name;
}

Error check_name(const std::string& name, const std::string& param) {
  if (is_valid_tool_name(name)) return std::nullopt;
  return invalid_request("Invalid value for '" + param + "': '" + shown_name(name) +
                             "' is not a valid function name (1 to 64 characters of a-z, A-Z, 0-9, "
                             "'_', '-', '.' and ':').",
                         param);
}

// {"type": "function"} or no type (vLLM's default); anything else names `param`.
Error check_function_type(const Json& v, const std::string& param) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) return fields::type_error(param, "a string", v);
  if (v != "function") {
    return invalid_request("Invalid value for '" + param + "': '" + v.get<std::string>() +
                               "'; only 'function' is supported.",
                           param);
  }
  return std::nullopt;
}

// One function definition: tools[i].function, or the legacy functions[i] (which has
// no `strict`: refused there, since ignoring it would drop what it asks for). `param`
// is where it sits.
Error read_function(const Json& f, const std::string& param, bool allow_strict, ChatTool& out,
                    const fields::FieldPolicy& policy) {
  if (!f.is_object()) return fields::type_error(param, "an object", f);
  bool has_name = false;
  for (const auto& [key, value] : f.items()) {
    std::string field = param + "." + key;
    Error e;
    if (key == "name") {
      if (value.is_null()) continue;
      e = fields::read_string(value, field, out.name);
      if (!e) e = check_name(out.name, field);
      has_name = true;
    } else if (key == "description") {
      e = fields::read_opt_string(value, field, out.description);
    } else if (key == "parameters") {
      if (!value.is_null() && !value.is_object()) e = fields::type_error(field, "a JSON Schema object", value);
      if (!e) out.parameters = value;
    } else if (key == "strict" && allow_strict) {
      bool strict = false;
      e = fields::read_bool(value, field, strict);
      if (!value.is_null()) out.strict = strict;
    } else if (key == "strict") {
      if (!value.is_null())
        e = fields::unsupported(field, "is only read on 'tools[i].function', not on the legacy 'functions'.");
    } else {
      e = policy.unknown(field);
    }
    if (e) return e;
  }
  if (!has_name) return fields::missing_field(param + ".name");
  return std::nullopt;
}

// tools[i]: {"type": "function", "function": {...}}.
Error read_tool(const Json& t, const std::string& param, ChatTool& out, const fields::FieldPolicy& policy) {
  if (!t.is_object()) return fields::type_error(param, "an object", t);
  bool has_function = false;
  for (const auto& [key, value] : t.items()) {
    std::string field = param + "." + key;
    Error e;
    if (key == "type") {
      e = check_function_type(value, field);
    } else if (key == "function") {
      if (value.is_null()) continue;
      e = read_function(value, field, /*allow_strict=*/true, out, policy);
      has_function = true;
    } else {
      e = policy.unknown(field);
    }
    if (e) return e;
  }
  if (!has_function) return fields::missing_field(param + ".function");
  return std::nullopt;
}

Error read_tool_list(const Json& v, const ToolForm& form, std::vector<ChatTool>& out,
                     const fields::FieldPolicy& policy) {
  const std::string key = form.key;
  if (v.is_null()) return std::nullopt;
  if (!v.is_array()) return fields::type_error(key, "an array of " + key, v);
  std::vector<ChatTool> tools(v.size());
  std::map<std::string, size_t> first_use;  // name -> index of the tool that has it
  for (size_t i = 0; i < v.size(); ++i) {
    ChatTool& tool = tools[i];
    tool.param = key + "[" + std::to_string(i) + "]";
    Error e = form.legacy ? read_function(v[i], tool.param, /*allow_strict=*/false, tool, policy)
                          : read_tool(v[i], tool.param, tool, policy);
    if (e) return e;
    tool.as_sent = form.legacy ? Json{{"type", "function"}, {"function", v[i]}} : v[i];
    auto [it, inserted] = first_use.emplace(tool.name, i);
    if (!inserted) {
      std::string param = tool.param + form.name_suffix;
      return invalid_request("Invalid value for '" + param + "': the function name '" + tool.name +
                                 "' is already used by " + tools[it->second].param + "; names must be unique.",
                             param);
    }
  }
  out = std::move(tools);
  return std::nullopt;
}

// tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name": ...}}.
Error read_tool_choice(const Json& v, std::optional<ToolChoice>& out, const fields::FieldPolicy& policy) {
  const std::string key = "tool_choice";
  if (v.is_null()) return std::nullopt;
  ToolChoice choice;
  if (v.is_string()) {
    if (v == "none") {
      choice.mode = ToolChoice::Mode::none;
    } else if (v == "auto") {
      choice.mode = ToolChoice::Mode::auto_;
    } else if (v == "required") {
      choice.mode = ToolChoice::Mode::required;
    } else {
      return invalid_request("Invalid value for 'tool_choice': '" + v.get<std::string>() +
                                 "'; expected 'none', 'auto', 'required' or a named function.",
                             key);
    }
    out = choice;
    return std::nullopt;
  }
  if (!v.is_object()) return fields::type_error(key, "a string or an object", v);
  bool has_function = false;
  for (const auto& [k, value] : v.items()) {
    std::string field = key + "." + k;
    if (k == "type") {
      if (auto e = check_function_type(value, field)) return e;
    } else if (k == "function") {
      if (value.is_null()) continue;
      if (!value.is_object()) return fields::type_error(field, "an object", value);
      if (auto e = policy.check_keys(value, field, {"name"})) return e;
      auto name = value.find("name");
      if (name == value.end() || name->is_null()) return fields::missing_field(field + ".name");
      if (auto e = fields::read_string(*name, field + ".name", choice.function)) return e;
      has_function = true;
    } else if (auto e = policy.unknown(field)) {
      return e;
    }
  }
  if (!has_function) return fields::missing_field(key + ".function");
  choice.mode = ToolChoice::Mode::function;
  out = choice;
  return std::nullopt;
}

// The legacy function_call: "none" | "auto" | {"name": ...}.
Error read_function_call(const Json& v, std::optional<ToolChoice>& out, const fields::FieldPolicy& policy) {
  const std::string key = "function_call";
  if (v.is_null()) return std::nullopt;
  ToolChoice choice;
  if (v.is_string()) {
    if (v != "none" && v != "auto") {
      return invalid_request("Invalid value for 'function_call': '" + v.get<std::string>() +
                                 "'; expected 'none', 'auto' or {\"name\": ...}.",
                             key);
    }
    choice.mode = v == "none" ? ToolChoice::Mode::none : ToolChoice::Mode::auto_;
    out = choice;
    return std::nullopt;
  }
  if (!v.is_object()) return fields::type_error(key, "a string or an object", v);
  if (auto e = policy.check_keys(v, key, {"name"})) return e;
  auto name = v.find("name");
  if (name == v.end() || name->is_null()) return fields::missing_field(key + ".name");
  if (auto e = fields::read_string(*name, key + ".name", choice.function)) return e;
  choice.mode = ToolChoice::Mode::function;
  out = choice;
  return std::nullopt;
}

// The choice against the tools it may pick from; `param` is the key it came in.
Error check_choice(const ToolChoice& choice, const std::vector<ChatTool>& tools, const char* tools_key,
                   const std::string& param) {
  using Mode = ToolChoice::Mode;
  if (choice.mode != Mode::required && choice.mode != Mode::function) return std::nullopt;
  const std::string asked = choice.mode == Mode::required ? "'required'" : "the function '" + choice.function + "'";
  if (tools.empty()) {
    return invalid_request("Invalid value for '" + param + "': " + asked +
                               " needs a non-empty 'tools' to call from.",
                           param);
  }
  if (choice.mode == Mode::function) {
    for (const auto& tool : tools) {
      if (tool.name == choice.function) return std::nullopt;
    }
    return invalid_request("Invalid value for '" + param + "': no function named '" +
                               shown_name(choice.function) + "' in '" + tools_key + "'.",
                           param);
  }
  return std::nullopt;
}

const Json* given(const Json& body, const char* key) {
  auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace

bool is_valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxToolNameBytes) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

bool is_tool_field(std::string_view key) {
  return key == "tools" || key == "functions" || key == "tool_choice" || key == "function_call";
}

Error parse_chat_tools(const Json& body, std::vector<ChatTool>& tools, ToolChoice& choice,
                       const fields::FieldPolicy& policy) {
  const Json* tools_json = given(body, "tools");
  const Json* functions_json = given(body, "functions");
  const Json* choice_json = given(body, "tool_choice");
  const Json* function_call_json = given(body, "function_call");
  if (tools_json && functions_json) {
    return invalid_request("Send either 'tools' or the legacy 'functions', not both.", "functions");
  }
  if (choice_json && function_call_json) {
    return invalid_request("Send either 'tool_choice' or the legacy 'function_call', not both.", "function_call");
  }
  const ToolForm& form = functions_json ? kFunctions : kTools;
  std::vector<ChatTool> read;
  if (const Json* list = functions_json ? functions_json : tools_json) {
    if (auto e = read_tool_list(*list, form, read, policy)) return e;
  }
  std::optional<ToolChoice> asked;
  const std::string choice_param = function_call_json ? "function_call" : "tool_choice";
  if (function_call_json) {
    if (auto e = read_function_call(*function_call_json, asked, policy)) return e;
  } else if (choice_json) {
    if (auto e = read_tool_choice(*choice_json, asked, policy)) return e;
  }
  ToolChoice resolved = asked.value_or(ToolChoice{});
  if (auto e = check_choice(resolved, read, form.key, choice_param)) return e;
  // Nothing to call: auto (asked or the default) means none.
  if (read.empty() && resolved.mode == ToolChoice::Mode::auto_) resolved.mode = ToolChoice::Mode::none;
  tools = std::move(read);
  choice = std::move(resolved);
  return std::nullopt;
}

}  // namespace sluice::proto
