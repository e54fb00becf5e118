// Methods of str and dict values (`s.startswith('x')`, `d.items()`), as Python has them.
#include <array>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/format.h"
#include "engine/chat/jinja/template_error.h"
#include "engine/chat/jinja/text.h"

namespace sluice::chat {
namespace {

using Method = Value (*)(const Value& self, const CallArgs& args);

std::optional<std::string> optional_string(const Value& v) {
  if (v.is_undefined() || v.is_none()) return std::nullopt;
  if (!v.is_string()) throw BuiltinError("expected a str argument, got " + v.type_name());
  return v.as_string();
}

int64_t optional_int(const Value& v, int64_t dflt) {
  if (v.is_undefined() || v.is_none()) return dflt;
  if (!v.is_int()) throw BuiltinError("expected an int argument, got " + v.type_name());
  return v.as_int();
}

// startswith / endswith accept a str or a tuple of them.
bool affix_matches(const std::string& s, const Value& affix, bool at_start) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) throw BuiltinError("startswith/endswith take a str or a tuple of str");
    const std::string& x = a.as_string();
    if (x.size() > s.size()) return false;
    return at_start ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list()) {
    for (const Value& a : affix.as_list()) {
      if (one(a)) return true;
    }
    return false;
  }
  return one(affix);
}

ValueList to_values(const std::vector<std::string>& parts) {
  ValueList out;
  for (const std::string& p : parts) out.emplace_back(p);
  return out;
}

// str.format with "{}", "{0}", "{name}" fields (no format specs), "{{" and "}}".
Value format(const Value& self, const CallArgs& args) {
  const std::string& f = self.as_string();
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
    } else if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
    } else if (f[i] == '{') {
      const size_t close = f.find('}', i);
      if (close == std::string::npos) throw BuiltinError("single '{' encountered in format string");
      const std::string field = f.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!") != std::string::npos) throw BuiltinError("format specs are not supported");
      Value v;
      if (field.empty()) {
        v = auto_index < args.positional.size() ? args.positional[auto_index] : Value();
        ++auto_index;
      } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
        const size_t k = std::stoul(field);
        v = k < args.positional.size() ? args.positional[k] : Value();
      } else if (const Value* named = args.keyword_arg(field)) {
        v = *named;
      }
      if (v.is_undefined()) throw BuiltinError("format: no argument for field '{" + field + "}'");
      out += to_str(v);
      i = close;
    } else if (f[i] == '}') {
      throw BuiltinError("single '}' encountered in format string");
    } else {
      out += f[i];
    }
    if (out.size() > kMaxStringBytes) throw BuiltinError("string too long");
  }
  return Value(std::move(out));
}

template <bool (*Pred)(char32_t)>
Value all_chars(const Value& self, const CallArgs&) {
  const std::string& s = self.as_string();
  if (s.empty()) return Value(false);
  for (unsigned char c : s) {
    if (!Pred(c)) return Value(false);
  }
  return Value(true);
}

bool ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool ascii_alpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ascii_alnum(char32_t c) { return ascii_digit(c) || ascii_alpha(c); }
bool space(char32_t c) { return text::is_space(c); }

constexpr std::pair<std::string_view, Method> kStringMethods[] = {
    {"startswith", [](const Value& s, const CallArgs& a) { return Value(affix_matches(s.as_string(), a.get(0, "prefix"), true)); }},
    {"endswith", [](const Value& s, const CallArgs& a) { return Value(affix_matches(s.as_string(), a.get(0, "suffix"), false)); }},
    {"strip", [](const Value& s, const CallArgs& a) { return Value(text::strip(s.as_string(), optional_string(a.get(0, "chars")), true, true)); }},
    {"lstrip", [](const Value& s, const CallArgs& a) { return Value(text::strip(s.as_string(), optional_string(a.get(0, "chars")), true, false)); }},
    {"rstrip", [](const Value& s, const CallArgs& a) { return Value(text::strip(s.as_string(), optional_string(a.get(0, "chars")), false, true)); }},
    {"split", [](const Value& s, const CallArgs& a) {
       const auto sep = optional_string(a.get(0, "sep"));
       if (sep && sep->empty()) throw BuiltinError("empty separator");
       return Value(to_values(text::split(s.as_string(), sep, optional_int(a.get(1, "maxsplit"), -1), false)));
     }},
    {"rsplit", [](const Value& s, const CallArgs& a) {
       const auto sep = optional_string(a.get(0, "sep"));
       if (sep && sep->empty()) throw BuiltinError("empty separator");
       return Value(to_values(text::split(s.as_string(), sep, optional_int(a.get(1, "maxsplit"), -1), true)));
     }},
    {"splitlines", [](const Value& s, const CallArgs&) {
       std::vector<std::string> lines = text::split(s.as_string(), std::string("\n"), -1, false);
       if (!lines.empty() && lines.back().empty()) lines.pop_back();
       return Value(to_values(lines));
     }},
    {"upper", [](const Value& s, const CallArgs&) { return Value(text::upper(s.as_string())); }},
    {"lower", [](const Value& s, const CallArgs&) { return Value(text::lower(s.as_string())); }},
    {"title", [](const Value& s, const CallArgs&) { return Value(text::title(s.as_string())); }},
    {"capitalize", [](const Value& s, const CallArgs&) { return Value(text::capitalize(s.as_string())); }},
    {"replace", [](const Value& s, const CallArgs& a) {
       const auto old = optional_string(a.get(0, "old"));
       const auto with = optional_string(a.get(1, "new"));
       if (!old || !with) throw BuiltinError("replace() takes two str arguments");
       std::string out = text::replace(s.as_string(), *old, *with, optional_int(a.get(2, "count"), -1));
       if (out.size() > kMaxStringBytes) throw BuiltinError("string too long");
       return Value(std::move(out));
     }},
    {"find", [](const Value& s, const CallArgs& a) {
       const auto sub = optional_string(a.get(0, "sub"));
       if (!sub) throw BuiltinError("find() takes a str");
       const size_t at = s.as_string().find(*sub);
       return Value(at == std::string::npos ? int64_t{-1} : static_cast<int64_t>(text::length(s.as_string().substr(0, at))));
     }},
    {"count", [](const Value& s, const CallArgs& a) {
       const auto sub = optional_string(a.get(0, "sub"));
       if (!sub) throw BuiltinError("count() takes a str");
       if (sub->empty()) return Value(static_cast<int64_t>(text::length(s.as_string()) + 1));
       int64_t n = 0;
       for (size_t at = s.as_string().find(*sub); at != std::string::npos; at = s.as_string().find(*sub, at + sub->size())) ++n;
       return Value(n);
     }},
    {"format", format},
    {"join", [](const Value& s, const CallArgs& a) {
       std::string out;
       bool first = true;
       for (const Value& item : iterate(a.get(0, "iterable"))) {
         if (!item.is_string()) throw BuiltinError("join() expects str items, got " + item.type_name());
         if (!first) out += s.as_string();
         first = false;
         out += item.as_string();
         if (out.size() > kMaxStringBytes) throw BuiltinError("string too long");
       }
       return Value(std::move(out));
     }},
    {"isdigit", all_chars<ascii_digit>},
    {"isalpha", all_chars<ascii_alpha>},
    {"isalnum", all_chars<ascii_alnum>},
    {"isspace", all_chars<space>},
};

constexpr std::pair<std::string_view, Method> kDictMethods[] = {
    {"items", [](const Value& d, const CallArgs&) {
       ValueList out;
       for (const auto& [k, v] : d.as_dict().entries()) out.push_back(Value::tuple(ValueList{k, v}));
       return Value(std::move(out));
     }},
    {"keys", [](const Value& d, const CallArgs&) {
       ValueList out;
       for (const auto& entry : d.as_dict().entries()) out.push_back(entry.first);
       return Value(std::move(out));
     }},
    {"values", [](const Value& d, const CallArgs&) {
       ValueList out;
       for (const auto& entry : d.as_dict().entries()) out.push_back(entry.second);
       return Value(std::move(out));
     }},
    {"get", [](const Value& d, const CallArgs& a) {
       const Value* v = d.as_dict().find(a.get(0, "key"));
       if (v != nullptr) return *v;
       const Value dflt = a.get(1, "default");
       return dflt.is_undefined() ? Value::none() : dflt;
     }},
};

// Methods that would change a list or dict: Jinja's immutable sandbox refuses them.
constexpr std::array<std::string_view, 11> kMutators = {"append", "extend", "insert", "pop", "remove", "clear",
                                                        "update", "setdefault", "sort", "reverse", "popitem"};

template <size_t N>
Value bind(const Value& self, std::string_view name, const std::pair<std::string_view, Method> (&table)[N]) {
  for (const auto& [method_name, fn] : table) {
    if (method_name == name) {
      const Method method = fn;
      return Value::function(std::string(name), [self, method](const CallArgs& args) { return method(self, args); });
    }
  }
  return Value();
}

}  // namespace

Value find_method(const Value& object, std::string_view name) {
  if (object.is_string()) return bind(object, name, kStringMethods);
  if (object.is_dict()) {
    Value m = bind(object, name, kDictMethods);
    if (!m.is_undefined()) return m;
  }
  if (object.is_dict() || object.is_list()) {
    for (std::string_view mutator : kMutators) {
      if (mutator == name) {
        const std::string message = "access to attribute '" + std::string(name) + "' of '" + object.type_name() +
                                    "' object is unsafe (templates cannot change their inputs)";
        return Value::function(std::string(name), [message](const CallArgs&) -> Value { throw BuiltinError(message); });
      }
    }
  }
  return Value();
}

}  // namespace sluice::chat
