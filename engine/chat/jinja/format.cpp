#include "engine/chat/jinja/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/chat/jinja/template_error.h"
#include "engine/chat/jinja/text.h"

namespace sluice::chat {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (u < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", u);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return text::float_repr(d);
}

// json.dumps turns scalar keys into strings; anything else cannot be a key.
std::string json_key(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::String: return key.as_string();
    case Value::Kind::Bool: return key.as_bool() ? "true" : "false";
    case Value::Kind::Int: return std::to_string(key.as_int());
    case Value::Kind::Float: return json_float(key.as_double());
    case Value::Kind::None: return "null";
    default: throw BuiltinError("keys must be str, int, float, bool or None, not " + key.type_name());
  }
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonOptions& options) : options_(options) {
    pretty_ = options.indent.has_value() || options.indent_text.has_value();
    indent_unit_ = options.indent_text ? *options.indent_text
                                       : std::string(static_cast<size_t>(std::max(0, options.indent.value_or(0))), ' ');
    item_sep_ = !options.item_separator.empty() ? options.item_separator : (pretty_ ? "," : ", ");
    key_sep_ = !options.key_separator.empty() ? options.key_separator : ": ";
  }

  void write(const Value& v, int depth) {
    if (depth > 512) throw BuiltinError("tojson: value nested too deeply");
    switch (v.kind()) {
      case Value::Kind::None: out_ += "null"; return;
      case Value::Kind::Bool: out_ += v.as_bool() ? "true" : "false"; return;
      case Value::Kind::Int: out_ += std::to_string(v.as_int()); return;
      case Value::Kind::Float: out_ += json_float(v.as_double()); return;
      case Value::Kind::String: out_ += json_string(v.as_string()); return;
      case Value::Kind::List: {
        const ValueList& list = v.as_list();
        if (list.empty()) {
          out_ += "[]";
          return;
        }
        out_ += '[';
        for (size_t i = 0; i < list.size(); ++i) {
          if (i > 0) out_ += item_sep_;
          newline(depth + 1);
          write(list[i], depth + 1);
        }
        newline(depth);
        out_ += ']';
        return;
      }
      case Value::Kind::Dict: {
        std::vector<std::pair<std::string, const Value*>> items;
        for (const auto& [key, value] : v.as_dict().entries()) items.emplace_back(json_key(key), &value);
        if (options_.sort_keys) {
          std::stable_sort(items.begin(), items.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        if (items.empty()) {
          out_ += "{}";
          return;
        }
        out_ += '{';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) out_ += item_sep_;
          newline(depth + 1);
          out_ += json_string(items[i].first);
          out_ += key_sep_;
          write(*items[i].second, depth + 1);
        }
        newline(depth);
        out_ += '}';
        return;
      }
      default:
        throw BuiltinError("Object of type " + v.type_name() + " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  void newline(int depth) {
    if (!pretty_) return;
    out_ += '\n';
    for (int i = 0; i < depth; ++i) out_ += indent_unit_;
  }

  const JsonOptions& options_;
  bool pretty_ = false;
  std::string indent_unit_;
  std::string item_sep_;
  std::string key_sep_;
  std::string out_;
};

}  // namespace

std::string to_str(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::String: return value.as_string();
    default: return to_repr(value);
  }
}

std::string to_repr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return value.as_bool() ? "True" : "False";
    case Value::Kind::Int: return std::to_string(value.as_int());
    case Value::Kind::Float: return text::float_repr(value.as_double());
    case Value::Kind::String: return text::repr(value.as_string());
    case Value::Kind::List: {
      const bool tuple = value.is_tuple();
      std::string out = tuple ? "(" : "[";
      for (size_t i = 0; i < value.as_list().size(); ++i) {
        if (i > 0) out += ", ";
        out += to_repr(value.as_list()[i]);
      }
      if (tuple && value.as_list().size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : value.as_dict().entries()) {
        if (!first) out += ", ";
        first = false;
        out += to_repr(key) + ": " + to_repr(item);
      }
      return out + "}";
    }
    case Value::Kind::Namespace: return "<Namespace>";
    case Value::Kind::Callable: return "<function " + value.callable_name() + ">";
  }
  return "";
}

std::string to_json(const Value& value, const JsonOptions& options) {
  JsonWriter writer(options);
  writer.write(value, 0);
  return writer.take();
}

}  // namespace sluice::chat
