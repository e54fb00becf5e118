// Jinja's tests (`x is defined`), the global functions, and the shared value helpers.
#include <array>
#include <ctime>
#include <utility>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/format.h"
#include "engine/chat/jinja/template_error.h"
#include "engine/chat/jinja/text.h"

namespace sluice::chat {
namespace {

Value arg0(const CallArgs& args) {
  if (args.positional.empty()) throw BuiltinError("the test needs an argument");
  return args.positional[0];
}

bool is_lower(const std::string& s) { return text::lower(s) == s && text::upper(s) != s; }
bool is_upper(const std::string& s) { return text::upper(s) == s && text::lower(s) != s; }

constexpr std::pair<std::string_view, TestFn> kTests[] = {
    {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
    {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
    {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
    {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
    {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
    // Jinja's Undefined is iterable (as empty) and has a length, so it passes these two.
    {"iterable", [](const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
    {"sequence", [](const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
    {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
    {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
    {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
    {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
    {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
    {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
    {"callable", [](const Value& v, const CallArgs&) { return v.is_callable(); }},
    {"lower", [](const Value& v, const CallArgs&) { return is_lower(to_str(v)); }},
    {"upper", [](const Value& v, const CallArgs&) { return is_upper(to_str(v)); }},
    {"odd", [](const Value& v, const CallArgs&) { return v.is_number() && !v.is_float() && v.as_int() % 2 != 0; }},
    {"even", [](const Value& v, const CallArgs&) { return v.is_number() && !v.is_float() && v.as_int() % 2 == 0; }},
    {"divisibleby",
     [](const Value& v, const CallArgs& a) {
       const Value d = arg0(a);
       if (!v.is_number() || !d.is_number() || d.as_int() == 0) throw BuiltinError("divisibleby needs nonzero integers");
       return v.as_int() % d.as_int() == 0;
     }},
    {"equalto", [](const Value& v, const CallArgs& a) { return v.equals(arg0(a)); }},
    {"eq", [](const Value& v, const CallArgs& a) { return v.equals(arg0(a)); }},
    {"==", [](const Value& v, const CallArgs& a) { return v.equals(arg0(a)); }},
    {"ne", [](const Value& v, const CallArgs& a) { return !v.equals(arg0(a)); }},
    {"!=", [](const Value& v, const CallArgs& a) { return !v.equals(arg0(a)); }},
    {"sameas",
     [](const Value& v, const CallArgs& a) {
       const Value o = arg0(a);
       if (v.is_none() || v.is_bool() || v.is_undefined()) return v.kind() == o.kind() && v.equals(o);
       return v.equals(o) && v.kind() == o.kind();
     }},
    {"lt", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) < 0; }},
    {"lessthan", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) < 0; }},
    {"<", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) < 0; }},
    {"le", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) <= 0; }},
    {"<=", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) <= 0; }},
    {"gt", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) > 0; }},
    {"greaterthan", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) > 0; }},
    {">", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) > 0; }},
    {"ge", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) >= 0; }},
    {">=", [](const Value& v, const CallArgs& a) { return compare_values(v, arg0(a)) >= 0; }},
    {"in",
     [](const Value& v, const CallArgs& a) {
       const Value c = arg0(a);
       if (c.is_string()) return v.is_string() && c.as_string().find(v.as_string()) != std::string::npos;
       if (c.is_dict()) return c.as_dict().find(v) != nullptr;
       for (const Value& item : iterate(c)) {
         if (item.equals(v)) return true;
       }
       return false;
     }},
    {"escaped", [](const Value&, const CallArgs&) { return false; }},
};

Value range_fn(const CallArgs& args) {
  int64_t start = 0, stop = 0, step = 1;
  for (const Value& v : args.positional) {
    if (!v.is_int() && !v.is_bool()) throw BuiltinError("range() arguments must be integers");
  }
  if (args.positional.size() == 1) {
    stop = args.positional[0].as_int();
  } else if (args.positional.size() == 2 || args.positional.size() == 3) {
    start = args.positional[0].as_int();
    stop = args.positional[1].as_int();
    if (args.positional.size() == 3) step = args.positional[2].as_int();
  } else {
    throw BuiltinError("range() takes 1 to 3 arguments");
  }
  if (step == 0) throw BuiltinError("range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= 100000) throw BuiltinError("range too big: at most 100000 items");
    out.emplace_back(i);
  }
  return Value(std::move(out));
}

// dict(mapping, **kwargs) and namespace(mapping, **kwargs) take the same arguments.
ValueDict dict_from_args(const CallArgs& args, bool check_names) {
  ValueDict out;
  if (args.positional.size() > 1) throw BuiltinError("expected at most 1 positional argument");
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.as_dict().entries()) out.set(k, v);
    } else {
      for (const Value& pair : iterate(src)) {
        const ValueList kv = iterate(pair);
        if (kv.size() != 2) throw BuiltinError("dictionary update sequence element has wrong length");
        out.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keyword) out.set(Value(k), v);
  if (check_names) {
    for (const auto& [k, v] : out.entries()) {
      if (k.is_string() && !k.as_string().empty() && k.as_string()[0] == '_') {
        throw BuiltinError("namespaces cannot store underscore-prefixed attributes");
      }
    }
  }
  return out;
}

}  // namespace

TestFn find_test(std::string_view name) {
  for (const auto& [test_name, fn] : kTests) {
    if (test_name == name) return fn;
  }
  return nullptr;
}

ValueDict global_functions() {
  ValueDict g;
  g.set("range", Value::function("range", range_fn));
  g.set("namespace", Value::function("namespace", [](const CallArgs& a) {
          return Value::namespace_of(dict_from_args(a, true));
        }));
  g.set("dict", Value::function("dict", [](const CallArgs& a) { return Value(dict_from_args(a, false)); }));
  g.set("raise_exception", Value::function("raise_exception", [](const CallArgs& a) -> Value {
          throw TemplateRaisedError(to_str(a.get(0, "message")));
        }));
  g.set("strftime_now", Value::function("strftime_now", [](const CallArgs& a) {
          const Value format = a.get(0, "format");
          if (!format.is_string()) throw BuiltinError("strftime_now() needs a format string");
          const std::time_t now = std::time(nullptr);
          std::tm local{};
          localtime_r(&now, &local);
          std::array<char, 512> buf{};
          const size_t n = std::strftime(buf.data(), buf.size(), format.as_string().c_str(), &local);
          return Value(std::string(buf.data(), n));
        }));
  return g;
}

int compare_values(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double() ? -1 : a.as_double() > b.as_double() ? 1 : 0;
    return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
  if (a.is_list() && b.is_list()) {
    const ValueList& x = a.as_list();
    const ValueList& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!x[i].equals(y[i])) return compare_values(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  throw BuiltinError("'<' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
}

ValueList iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return {};
    case Value::Kind::List: return v.as_list();
    case Value::Kind::Dict: {
      ValueList keys;
      for (const auto& entry : v.as_dict().entries()) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::String: {
      ValueList out;
      for (std::string_view c : text::chars(v.as_string())) out.emplace_back(c);
      return out;
    }
    default: throw BuiltinError("'" + v.type_name() + "' object is not iterable");
  }
}

int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return 0;
    case Value::Kind::String: return static_cast<int64_t>(text::length(v.as_string()));
    case Value::Kind::List: return static_cast<int64_t>(v.as_list().size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.as_dict().size());
    default: throw BuiltinError("object of type '" + v.type_name() + "' has no len()");
  }
}

}  // namespace sluice::chat
