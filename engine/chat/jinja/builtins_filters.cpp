// Jinja's filters (`x | trim`), with Hugging Face's tojson.
#include <algorithm>
#include <cmath>

#include "engine/chat/jinja/builtins.h"
#include "engine/chat/jinja/format.h"
#include "engine/chat/jinja/template_error.h"
#include "engine/chat/jinja/text.h"

namespace sluice::chat {
namespace {

std::optional<std::string> optional_string(const Value& v) {
  if (v.is_undefined() || v.is_none()) return std::nullopt;
  return to_str(v);
}

// `attribute="a.b"` of map, selectattr, sort, join: dict keys (or list indices) by dots.
Value attribute_of(const Value& item, const std::string& path) {
  Value v = item;
  for (const std::string& part : text::split(path, std::string("."), -1, false)) {
    if (v.is_dict() || v.is_namespace()) {
      const Value* found = v.as_dict().find(part);
      v = found ? *found : Value::undefined("no attribute '" + part + "'");
    } else if (v.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      const size_t i = std::stoul(part);
      v = i < v.as_list().size() ? v.as_list()[i] : Value::undefined("no element " + part);
    } else {
      return Value::undefined("no attribute '" + part + "'");
    }
  }
  return v;
}

CallArgs args_from(const CallArgs& args, size_t first) {
  CallArgs rest;
  for (size_t i = first; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
  return rest;
}

// select / reject / selectattr / rejectattr share this.
Value select_items(const Value& seq, const CallArgs& args, bool by_attribute, bool keep_matches) {
  size_t next = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty()) throw BuiltinError("selectattr needs an attribute name");
    attribute = to_str(args.positional[next++]);
  }
  TestFn test = nullptr;
  if (next < args.positional.size()) {
    const std::string name = to_str(args.positional[next++]);
    test = find_test(name);
    if (test == nullptr) throw BuiltinError("no test named '" + name + "'");
  }
  const CallArgs test_args = args_from(args, next);
  ValueList out;
  for (const Value& item : iterate(seq)) {
    const Value subject = by_attribute ? attribute_of(item, attribute) : item;
    const bool match = test ? test(subject, test_args) : subject.truthy();
    if (match == keep_matches) out.push_back(item);
  }
  return Value(std::move(out));
}

Value tojson(const Value& v, const CallArgs& args) {
  JsonOptions options;
  const Value indent = args.get(0, "indent");
  if (indent.is_int()) options.indent = static_cast<int>(indent.as_int());
  if (indent.is_string()) options.indent_text = indent.as_string();
  const Value separators = args.get(2, "separators");
  if (separators.is_list() && separators.as_list().size() == 2) {
    options.item_separator = to_str(separators.as_list()[0]);
    options.key_separator = to_str(separators.as_list()[1]);
  }
  options.sort_keys = args.get(3, "sort_keys").truthy();
  return Value(to_json(v, options));
}

Value to_int(const Value& v, const CallArgs& args) {
  const Value fallback = args.get(0, "default");
  const Value dflt = fallback.is_undefined() ? Value(0) : fallback;
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return std::isfinite(v.as_double()) ? Value(static_cast<int64_t>(v.as_double())) : dflt;
  if (!v.is_string()) return dflt;
  const std::string s = text::strip(v.as_string(), std::nullopt, true, true);
  try {
    size_t used = 0;
    const int64_t i = std::stoll(s, &used, 10);
    if (used == s.size()) return Value(i);
    const double d = std::stod(s, &used);
    if (used == s.size() && std::isfinite(d)) return Value(static_cast<int64_t>(d));
  } catch (const std::exception&) {
  }
  return dflt;
}

Value to_float(const Value& v, const CallArgs& args) {
  const Value fallback = args.get(0, "default");
  const Value dflt = fallback.is_undefined() ? Value(0.0) : fallback;
  if (v.is_number()) return Value(v.as_double());
  if (!v.is_string()) return dflt;
  try {
    size_t used = 0;
    const std::string s = text::strip(v.as_string(), std::nullopt, true, true);
    const double d = std::stod(s, &used);
    if (used == s.size()) return Value(d);
  } catch (const std::exception&) {
  }
  return dflt;
}

Value join(const Value& v, const CallArgs& args) {
  const std::string sep = to_str(args.get(0, "d"));
  const Value attribute = args.get(1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(attribute.is_undefined() || attribute.is_none() ? item : attribute_of(item, to_str(attribute)));
    if (out.size() > kMaxStringBytes) throw BuiltinError("string too long");
  }
  return Value(std::move(out));
}

Value map_items(const Value& v, const CallArgs& args) {
  ValueList out;
  if (const Value* attribute = args.keyword_arg("attribute")) {
    const Value* dflt = args.keyword_arg("default");
    for (const Value& item : iterate(v)) {
      Value got = attribute_of(item, to_str(*attribute));
      out.push_back(got.is_undefined() && dflt ? *dflt : got);
    }
    return Value(std::move(out));
  }
  if (args.positional.empty()) throw BuiltinError("map needs a filter name or attribute=");
  const std::string name = to_str(args.positional[0]);
  const FilterFn filter = find_filter(name);
  if (filter == nullptr) throw BuiltinError("no filter named '" + name + "'");
  const CallArgs rest = args_from(args, 1);
  for (const Value& item : iterate(v)) out.push_back(filter(item, rest));
  return Value(std::move(out));
}

Value sort_items(const Value& v, const CallArgs& args) {
  ValueList items = iterate(v);
  const bool reverse = args.get(0, "reverse").truthy();
  const bool case_sensitive = args.get(1, "case_sensitive").truthy();
  const Value attribute = args.get(2, "attribute");
  auto key = [&](const Value& item) {
    Value k = attribute.is_undefined() || attribute.is_none() ? item : attribute_of(item, to_str(attribute));
    return (!case_sensitive && k.is_string()) ? Value(text::lower(k.as_string())) : k;
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? compare_values(key(b), key(a)) < 0 : compare_values(key(a), key(b)) < 0;
  });
  return Value(std::move(items));
}

Value indent_text(const Value& v, const CallArgs& args) {
  const Value width = args.get(0, "width");
  const std::string pad = width.is_string() ? width.as_string()
                                            : std::string(static_cast<size_t>(width.is_undefined() ? 4 : std::max<int64_t>(0, width.as_int())), ' ');
  const bool first = args.get(1, "first").truthy();
  const bool blank = args.get(2, "blank").truthy();
  const std::vector<std::string> lines = text::split(to_str(v), std::string("\n"), -1, false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if ((i > 0 || first) && (blank || !text::strip(lines[i], std::nullopt, true, true).empty())) out += pad;
    out += lines[i];
  }
  return Value(std::move(out));
}

Value round_number(const Value& v, const CallArgs& args) {
  const int64_t precision = args.get(0, "precision").is_int() ? args.get(0, "precision").as_int() : 0;
  const std::string method = args.get(1, "method").is_string() ? args.get(1, "method").as_string() : "common";
  if (!v.is_number()) throw BuiltinError("round needs a number");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * scale;
  // Python's round() rounds halves to even, which nearbyint does in the default mode.
  const double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::nearbyint(x);
  return Value(r / scale);
}

constexpr std::pair<std::string_view, FilterFn> kFilters[] = {
    {"trim", [](const Value& v, const CallArgs& a) { return Value(text::strip(to_str(v), optional_string(a.get(0, "chars")), true, true)); }},
    {"length", [](const Value& v, const CallArgs&) { return Value(length_of(v)); }},
    {"count", [](const Value& v, const CallArgs&) { return Value(length_of(v)); }},
    {"lower", [](const Value& v, const CallArgs&) { return Value(text::lower(to_str(v))); }},
    {"upper", [](const Value& v, const CallArgs&) { return Value(text::upper(to_str(v))); }},
    {"capitalize", [](const Value& v, const CallArgs&) { return Value(text::capitalize(to_str(v))); }},
    {"title", [](const Value& v, const CallArgs&) { return Value(text::title(to_str(v))); }},
    {"tojson", tojson},
    {"join", join},
    {"first", [](const Value& v, const CallArgs&) {
       const ValueList items = iterate(v);
       return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
     }},
    {"last", [](const Value& v, const CallArgs&) {
       const ValueList items = iterate(v);
       return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
     }},
    {"default", [](const Value& v, const CallArgs& a) {
       const bool boolean = a.get(1, "boolean").truthy();
       const Value dflt = a.get(0, "default_value");
       if (v.is_undefined() || (boolean && !v.truthy())) return dflt.is_undefined() ? Value("") : dflt;
       return v;
     }},
    {"string", [](const Value& v, const CallArgs&) { return Value(to_str(v)); }},
    {"int", to_int},
    {"float", to_float},
    {"list", [](const Value& v, const CallArgs&) { return Value(iterate(v)); }},
    {"items", [](const Value& v, const CallArgs&) {
       if (v.is_undefined()) return Value(ValueList{});
       if (!v.is_dict()) throw BuiltinError("items filter needs a mapping, got " + v.type_name());
       ValueList out;
       for (const auto& [k, item] : v.as_dict().entries()) out.push_back(Value::tuple(ValueList{k, item}));
       return Value(std::move(out));
     }},
    {"dictsort", [](const Value& v, const CallArgs&) {
       if (!v.is_dict()) throw BuiltinError("dictsort needs a mapping");
       ValueList out;
       for (const auto& [k, item] : v.as_dict().entries()) out.push_back(Value::tuple(ValueList{k, item}));
       std::stable_sort(out.begin(), out.end(), [](const Value& a, const Value& b) {
         const Value& x = a.as_list()[0];
         const Value& y = b.as_list()[0];
         return compare_values(x.is_string() ? Value(text::lower(x.as_string())) : x,
                               y.is_string() ? Value(text::lower(y.as_string())) : y) < 0;
       });
       return Value(std::move(out));
     }},
    {"replace", [](const Value& v, const CallArgs& a) {
       const Value count = a.get(2, "count");
       std::string out = text::replace(to_str(v), to_str(a.get(0, "old")), to_str(a.get(1, "new")),
                                       count.is_int() ? count.as_int() : -1);
       if (out.size() > kMaxStringBytes) throw BuiltinError("string too long");
       return Value(std::move(out));
     }},
    {"select", [](const Value& v, const CallArgs& a) { return select_items(v, a, false, true); }},
    {"reject", [](const Value& v, const CallArgs& a) { return select_items(v, a, false, false); }},
    {"selectattr", [](const Value& v, const CallArgs& a) { return select_items(v, a, true, true); }},
    {"rejectattr", [](const Value& v, const CallArgs& a) { return select_items(v, a, true, false); }},
    {"map", map_items},
    {"attr", [](const Value& v, const CallArgs& a) { return attribute_of(v, to_str(a.get(0, "name"))); }},
    {"safe", [](const Value& v, const CallArgs&) { return v; }},
    {"escape", [](const Value& v, const CallArgs&) { return Value(text::html_escape(to_str(v))); }},
    {"e", [](const Value& v, const CallArgs&) { return Value(text::html_escape(to_str(v))); }},
    {"abs", [](const Value& v, const CallArgs&) {
       if (!v.is_number()) throw BuiltinError("bad operand type for abs(): '" + v.type_name() + "'");
       return v.is_float() ? Value(std::fabs(v.as_double())) : Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
     }},
    {"reverse", [](const Value& v, const CallArgs&) {
       if (v.is_string()) {
         std::vector<std::string_view> cs = text::chars(v.as_string());
         std::string out;
         for (size_t i = cs.size(); i-- > 0;) out += cs[i];
         return Value(std::move(out));
       }
       ValueList items = iterate(v);
       std::reverse(items.begin(), items.end());
       return Value(std::move(items));
     }},
    {"sort", sort_items},
    {"unique", [](const Value& v, const CallArgs&) {
       ValueList out;
       for (const Value& item : iterate(v)) {
         if (std::none_of(out.begin(), out.end(), [&](const Value& seen) { return seen.equals(item); })) out.push_back(item);
       }
       return Value(std::move(out));
     }},
    {"indent", indent_text},
    {"round", round_number},
    {"wordcount", [](const Value& v, const CallArgs&) {
       return Value(static_cast<int64_t>(text::split(to_str(v), std::nullopt, -1, false).size()));
     }},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
  if (name == "d") name = "default";
  for (const auto& [filter_name, fn] : kFilters) {
    if (filter_name == name) return fn;
  }
  return nullptr;
}

}  // namespace sluice::chat
