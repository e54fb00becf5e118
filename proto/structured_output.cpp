// Parsing of the structured-output fields of every dialect (structured_output.h).
#include "proto/structured_output.h"

namespace sluice::proto {
namespace {

using fields::Error;
using fields::Json;
using Kind = grammar::GrammarSpec::Kind;

Error one_only(const std::optional<StructuredOutput>& out, const std::string& param) {
  if (!out) return std::nullopt;
  return invalid_request("Only one output constraint may be given; '" + out->param + "' and '" + param +
                             "' were both sent.",
                         param);
}

Error read_schema(const Json& v, const std::string& param, StructuredOutput& out) {
  if (v.is_string()) {  // vLLM accepts the schema as a JSON string too
    const Json parsed = Json::parse(v.get_ref<const std::string&>(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !(parsed.is_object() || parsed.is_boolean()))
      return invalid_request("'" + param + "' is not a JSON schema: the string does not parse as a JSON object.",
                             param);
    out.spec.text = v.get<std::string>();  // the client's own text
  } else if (v.is_object() || v.is_boolean()) {
    out.spec.text = v.dump();  // in the client's key order: the order of the output's properties
  } else {
    return fields::type_error(param, "a JSON schema object", v);
  }
  out.spec.kind = Kind::json_schema;
  out.param = param;
  return std::nullopt;
}

Error read_string_constraint(const Json& v, const std::string& param, Kind kind, StructuredOutput& out) {
  if (auto e = fields::read_string(v, param, out.spec.text)) return e;
  if (out.spec.text.empty()) return invalid_request("'" + param + "' must not be empty.", param);
  out.spec.kind = kind;
  out.param = param;
  return std::nullopt;
}

Error read_choice(const Json& v, const std::string& param, StructuredOutput& out) {
  if (!v.is_array() || v.empty()) return fields::type_error(param, "a non-empty array of strings", v);
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) return fields::type_error(param + "[" + std::to_string(i) + "]", "a string", v[i]);
    out.spec.choices.push_back(v[i].get<std::string>());
  }
  out.spec.kind = Kind::choice;
  out.param = param;
  return std::nullopt;
}

Error read_response_format(const Json& v, std::optional<StructuredOutput>& out, const fields::FieldPolicy& policy) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return fields::type_error("response_format", "an object", v);
  auto type = v.find("type");
  if (type == v.end() || type->is_null()) return fields::missing_field("response_format.type");
  if (!type->is_string()) return fields::type_error("response_format.type", "a string", *type);
  const std::string kind = type->get<std::string>();
  // llama-server's json_object may carry a `schema`: then it is that schema's constraint.
  const bool llama_schema = kind == "json_object" && v.contains("schema") && !v["schema"].is_null();
  if (kind == "json_schema") {
    if (auto e = policy.check_keys(v, "response_format", {"type", "json_schema"})) return e;
  } else if (kind == "json_object") {
    if (auto e = policy.check_keys(v, "response_format", {"type", "schema"})) return e;
  } else if (auto e = policy.check_keys(v, "response_format", {"type"})) {
    return e;
  }
  if (kind == "text") return std::nullopt;
  if (auto e = one_only(out, "response_format")) return e;
  StructuredOutput so;
  if (llama_schema) {
    if (auto e = read_schema(v["schema"], "response_format.schema", so)) return e;
    so.spec.strict = true;  // as llama-server's schema converter: what it cannot enforce is refused
    so.param = "response_format";
  } else if (kind == "json_object") {
    so.spec.kind = Kind::json_object;
    so.param = "response_format";
  } else if (kind == "json_schema") {
    auto js = v.find("json_schema");
    if (js == v.end() || js->is_null()) return fields::missing_field("response_format.json_schema");
    if (!js->is_object()) return fields::type_error("response_format.json_schema", "an object", *js);
    bool has_schema = false;
    for (const auto& [key, value] : js->items()) {
      const std::string field = "response_format.json_schema." + key;
      if (key == "schema") {
        if (auto e = read_schema(value, field, so)) return e;
        has_schema = true;
      } else if (key == "strict") {
        bool strict = false;
        if (auto e = fields::read_bool(value, field, strict)) return e;
        so.spec.strict = strict;
      } else if (key == "name" || key == "description") {
        std::optional<std::string> text;
        if (auto e = fields::read_opt_string(value, field, text)) return e;
      } else if (auto e = policy.unknown(field)) {
        return e;
      }
    }
    if (!has_schema) return fields::missing_field("response_format.json_schema.schema");
    if (!js->contains("strict")) so.spec.strict = false;  // OpenAI's default
    so.param = "response_format";
  } else {
    return invalid_request("response_format of type '" + kind +
                               "' is not supported; use 'text', 'json_object' or 'json_schema'.",
                           "response_format.type");
  }
  out = std::move(so);
  return std::nullopt;
}

Error read_structured_outputs(const Json& v, std::optional<StructuredOutput>& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return fields::type_error("structured_outputs", "an object", v);
  StructuredOutput so;
  std::optional<bool> disable_any_whitespace;
  int count = 0;
  for (const auto& [key, value] : v.items()) {
    const std::string field = "structured_outputs." + key;
    Error e;
    if (value.is_null()) continue;
    if (key == "json") {
      ++count;
      e = read_schema(value, field, so);
      so.spec.strict = true;
    } else if (key == "regex") {
      ++count;
      e = read_string_constraint(value, field, Kind::regex, so);
    } else if (key == "grammar") {
      ++count;
      e = read_string_constraint(value, field, Kind::gbnf, so);
    } else if (key == "choice") {
      ++count;
      e = read_choice(value, field, so);
    } else if (key == "json_object") {
      bool wanted = false;
      e = fields::read_bool(value, field, wanted);
      if (!e && wanted) {
        ++count;
        so.spec.kind = Kind::json_object;
        so.param = field;
      }
    } else if (key == "disable_any_whitespace") {
      bool disable = false;
      e = fields::read_bool(value, field, disable);
      disable_any_whitespace = disable;
    } else if (key == "disable_fallback" || key == "disable_additional_properties") {
      bool ignored = false;
      e = fields::read_bool(value, field, ignored);
    } else {
      e = fields::unsupported(field, "is not supported.");
    }
    if (e) return e;
    if (count > 1)
      return invalid_request("'structured_outputs' must name one of json, regex, choice, grammar, json_object.",
                             field);
  }
  if (count == 0) return invalid_request("'structured_outputs' names no constraint.", "structured_outputs");
  // vLLM allows any whitespace unless disabled; sluice is compact unless asked.
  so.spec.any_whitespace = disable_any_whitespace.has_value() && !*disable_any_whitespace;
  if (auto e = one_only(out, so.param)) return e;
  out = std::move(so);
  return std::nullopt;
}

}  // namespace

Error apply_structured_output_field(const std::string& key, const Json& value, std::optional<StructuredOutput>& out,
                                    bool& handled, const fields::FieldPolicy& policy) {
  handled = true;
  if (key == "response_format") return read_response_format(value, out, policy);
  if (key == "structured_outputs") return read_structured_outputs(value, out);
  if (key == "guided_decoding_backend") {
    std::optional<std::string> ignored;
    return fields::read_opt_string(value, key, ignored);
  }
  if (key == "guided_whitespace_pattern") {
    if (value.is_null()) return std::nullopt;
    return fields::unsupported(key, "is not supported; structured_outputs.disable_any_whitespace chooses "
                                    "between compact and any JSON whitespace.");
  }
  const bool is_constraint = key == "guided_json" || key == "guided_regex" || key == "guided_choice" ||
                             key == "guided_grammar" || key == "grammar" || key == "json_schema";
  if (!is_constraint) {
    handled = false;
    return std::nullopt;
  }
  if (value.is_null()) return std::nullopt;
  if (auto e = one_only(out, key)) return e;
  StructuredOutput so;
  Error e;
  if (key == "guided_json" || key == "json_schema") {
    e = read_schema(value, key, so);
    so.spec.strict = true;
  } else if (key == "guided_regex") {
    e = read_string_constraint(value, key, Kind::regex, so);
  } else if (key == "guided_choice") {
    e = read_choice(value, key, so);
  } else {
    e = read_string_constraint(value, key, Kind::gbnf, so);
  }
  if (e) return e;
  out = std::move(so);
  return std::nullopt;
}

}  // namespace sluice::proto
