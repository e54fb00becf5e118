#include "proto/fields.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sluice::proto::fields {
namespace {

// The JSON value as it reads in an error message, kept short.
std::string shown(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

bool as_int64(const Json& v, int64_t& out) {
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    out = v.get<int64_t>();
    return true;
  }
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      out = std::numeric_limits<int64_t>::max();  // out of any range we check
    } else {
      out = static_cast<int64_t>(u);
    }
    return true;
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d) || d < -9.2e18 || d > 9.2e18) return false;
    out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

std::string format_number(double d) {
  Json j = d;
  return j.dump();
}

// The deepest nesting of arrays and objects in `text`, stopping as soon as it passes
// `limit`. Brackets inside strings do not count. On malformed JSON the count can only
// run ahead of the parser's, which stops at the first error, so it never misses depth
// the parser would build.
std::size_t nesting_depth(std::string_view text, std::size_t limit) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, a quote included
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) break;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

}  // namespace

Error parse_object(std::string_view body, Json& out) {
  // Checked before parsing: the DOM of a deeply nested body costs far more memory than
  // its bytes (2.5M levels in 5 MB: over 300 MB), and every recursive walk of it
  // (dump, copy, compare) would risk the stack.
  if (nesting_depth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    return invalid_request("The JSON body of your request nests arrays and objects more than " +
                           std::to_string(kMaxJsonDepth) + " levels deep.");
  }
  std::string error;
  if (!parse_json_document(body, out, error)) return invalid_request(error);
  if (!out.is_object()) {
    return invalid_request("The request body must be a JSON object, got " +
                           std::string(out.type_name()) + ".");
  }
  return std::nullopt;
}

ApiError type_error(const std::string& param, std::string_view expected, const Json& got) {
  return invalid_request("Invalid type for '" + param + "': expected " + std::string(expected) +
                             ", but got " + (got.is_null() ? "null" : std::string("a ") + got.type_name()) +
                             ".",
                         param);
}

ApiError range_error(const std::string& param, const Json& got, std::string_view range) {
  return invalid_request(
      "Invalid value for '" + param + "': " + shown(got) + " is not " + std::string(range) + ".",
      param);
}

ApiError unknown_field(const std::string& param) {
  return invalid_request("Unrecognized request argument supplied: " + param, param);
}

Error FieldPolicy::unknown(const std::string& param) const {
  if (strict_) return unknown_field(param);
  ignored_->push_back(param);
  return std::nullopt;
}

ApiError missing_field(const std::string& param) {
  return invalid_request("Missing required parameter: '" + param + "'.", param);
}

ApiError unsupported(const std::string& param, std::string_view what) {
  return invalid_request("'" + param + "' " + std::string(what), param);
}

Error read_int(const Json& v, const std::string& param, int64_t lo, int64_t hi, int64_t& out) {
  if (v.is_null()) return std::nullopt;
  int64_t x = 0;
  if (!as_int64(v, x)) return type_error(param, "an integer", v);
  if (x < lo || x > hi) {
    return range_error(param, v,
                       "between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  out = x;
  return std::nullopt;
}

Error read_int32(const Json& v, const std::string& param, int64_t lo, int64_t hi, int32_t& out) {
  int64_t x = out;
  if (auto e = read_int(v, param, lo, hi, x)) return e;
  out = static_cast<int32_t>(x);
  return std::nullopt;
}

Error read_opt_int32(const Json& v, const std::string& param, int64_t lo, int64_t hi,
                     std::optional<int32_t>& out) {
  if (v.is_null()) return std::nullopt;
  int32_t x = 0;
  if (auto e = read_int32(v, param, lo, hi, x)) return e;
  out = x;
  return std::nullopt;
}

Error read_float(const Json& v, const std::string& param, double lo, double hi, float& out,
                 bool lo_open, bool hi_open) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number()) return type_error(param, "a number", v);
  double d = v.get<double>();
  bool ok = std::isfinite(d) && (lo_open ? d > lo : d >= lo) && (hi_open ? d < hi : d <= hi);
  if (!ok) {
    return range_error(param, v,
                       std::string("in the range ") + (lo_open ? "(" : "[") + format_number(lo) +
                           ", " + format_number(hi) + (hi_open ? ")" : "]"));
  }
  out = static_cast<float>(d);
  return std::nullopt;
}

Error read_bool(const Json& v, const std::string& param, bool& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_boolean()) return type_error(param, "a boolean", v);
  out = v.get<bool>();
  return std::nullopt;
}

Error read_string(const Json& v, const std::string& param, std::string& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) return type_error(param, "a string", v);
  out = v.get<std::string>();
  return std::nullopt;
}

Error read_opt_string(const Json& v, const std::string& param, std::optional<std::string>& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_string()) return type_error(param, "a string", v);
  out = v.get<std::string>();
  return std::nullopt;
}

Error read_seed(const Json& v, const std::string& param, std::optional<uint64_t>& out) {
  if (v.is_null()) return std::nullopt;
  if (v.is_number_unsigned()) {
    out = v.get<uint64_t>();
    return std::nullopt;
  }
  int64_t x = 0;
  if (!as_int64(v, x)) return type_error(param, "an integer", v);
  out = static_cast<uint64_t>(x);
  return std::nullopt;
}

Error read_stop(const Json& v, const std::string& param, std::vector<std::string>& out) {
  if (v.is_null()) return std::nullopt;
  std::vector<std::string> stops;
  if (v.is_string()) {
    stops.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.size() > 4) return invalid_request("'" + param + "' may hold at most 4 sequences.", param);
    for (const auto& s : v) {
      if (!s.is_string()) return type_error(param, "a string or an array of strings", v);
      stops.push_back(s.get<std::string>());
    }
  } else {
    return type_error(param, "a string or an array of strings", v);
  }
  for (const auto& s : stops) {
    if (s.empty()) return invalid_request("'" + param + "' sequences must not be empty.", param);
    if (s.size() > kMaxStopStringBytes) {
      return invalid_request("'" + param + "' sequences may be at most " +
                                 std::to_string(kMaxStopStringBytes) + " bytes long, got " +
                                 std::to_string(s.size()) + ".",
                             param);
    }
  }
  out = std::move(stops);
  return std::nullopt;
}

Error read_logit_bias(const Json& v, const std::string& param, size_t max_entries,
                      std::shared_ptr<const std::map<int32_t, float>>& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return type_error(param, "an object of token id to bias", v);
  if (v.size() > max_entries) {
    return invalid_request("'" + param + "' may hold at most " + std::to_string(max_entries) + " entries, got " +
                               std::to_string(v.size()) + ".",
                           param);
  }
  std::map<int32_t, float> bias;
  for (const auto& [key, value] : v.items()) {
    bool digits = !key.empty() && key.size() <= 10 &&
                  key.find_first_not_of("0123456789") == std::string::npos;
    int64_t id = digits ? std::stoll(key) : -1;
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return invalid_request("Invalid key in '" + param + "': \"" + key +
                                 "\" is not a token id (a non-negative integer as a string).",
                             param);
    }
    if (!value.is_number()) return type_error(param, "a number for each token id", value);
    double d = value.get<double>();
    if (!(d >= -100.0 && d <= 100.0)) {
      return invalid_request("Invalid value in '" + param + "' for token " + key + ": " + shown(value) +
                                 " is not in the range [-100, 100].",
                             param);
    }
    bias[static_cast<int32_t>(id)] = static_cast<float>(d);
  }
  if (bias.empty()) {
    out.reset();
  } else {
    out = std::make_shared<const std::map<int32_t, float>>(std::move(bias));
  }
  return std::nullopt;
}

Error read_token_ids(const Json& v, const std::string& param, std::vector<int32_t>& out) {
  if (!v.is_array()) return type_error(param, "an array of token ids", v);
  std::vector<int32_t> ids;
  ids.reserve(v.size());
  for (const auto& t : v) {
    int64_t id = 0;
    if (!as_int64(t, id)) return type_error(param, "an array of token ids", t);
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return range_error(param, t, "a token id (0 to 2147483647)");
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  out = std::move(ids);
  return std::nullopt;
}

}  // namespace sluice::proto::fields
