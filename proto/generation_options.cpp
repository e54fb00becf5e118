#include "proto/generation_options.h"

#include <cmath>
#include <limits>

namespace sluice::proto {

using fields::Error;
using fields::Json;

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

Error read_stream_options(const Json& v, GenerationOptions& options) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return fields::type_error("stream_options", "an object", v);
  for (const auto& [key, value] : v.items()) {
    if (key == "include_usage") {
      if (auto e = fields::read_bool(value, "stream_options.include_usage", options.include_usage)) return e;
    } else {
      return fields::unknown_field("stream_options." + key);
    }
  }
  return std::nullopt;
}

Error read_top_k(const Json& v, int32_t& out) {
  if (v.is_null()) return std::nullopt;
  int32_t k = 0;
  if (auto e = fields::read_int32(v, "top_k", -1, kInt32Max, k)) return e;
  if (k == 0) return fields::range_error("top_k", v, "-1 (off) or at least 1");
  out = k;
  return std::nullopt;
}

Error read_timeout(const Json& v, std::optional<double>& out) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_number()) return fields::type_error("timeout", "a number of seconds", v);
  double s = v.get<double>();
  if (!(std::isfinite(s) && s > 0.0)) return fields::range_error("timeout", v, "a number of seconds above 0");
  out = s;
  return std::nullopt;
}

void mark_given(const std::string& key, engine::SamplingFieldsGiven& given) {
  if (key == "temperature") given.temperature = true;
  if (key == "top_p") given.top_p = true;
  if (key == "top_k") given.top_k = true;
  if (key == "min_p") given.min_p = true;
  if (key == "presence_penalty") given.presence_penalty = true;
  if (key == "frequency_penalty") given.frequency_penalty = true;
  if (key == "repetition_penalty") given.repetition_penalty = true;
}

}  // namespace

Error apply_generation_field(const std::string& key, const Json& value, GenerationOptions& options,
                             bool& handled) {
  handled = true;
  auto& s = options.sampling;
  mark_given(key, options.given);
  if (key == "model") {
    if (value.is_null()) return std::nullopt;  // reported as missing afterwards
    return fields::read_string(value, "model", options.model);
  }
  if (key == "temperature") return fields::read_float(value, key, 0.0, 2.0, s.temperature);
  if (key == "top_p") return fields::read_float(value, key, 0.0, 1.0, s.top_p, /*lo_open=*/true);
  if (key == "top_k") return read_top_k(value, s.top_k);
  if (key == "min_p") return fields::read_float(value, key, 0.0, 1.0, s.min_p);
  if (key == "presence_penalty") return fields::read_float(value, key, -2.0, 2.0, s.presence_penalty);
  if (key == "frequency_penalty") return fields::read_float(value, key, -2.0, 2.0, s.frequency_penalty);
  if (key == "repetition_penalty") {
    return fields::read_float(value, key, 0.0, 2.0, s.repetition_penalty, /*lo_open=*/true);
  }
  if (key == "logit_bias") return fields::read_logit_bias(value, key, s.logit_bias);
  if (key == "seed") return fields::read_seed(value, key, s.seed);
  if (key == "ignore_eos") return fields::read_bool(value, key, s.ignore_eos);
  if (key == "n") return fields::read_int32(value, key, 1, 128, s.n);
  if (key == "stop") return fields::read_stop(value, key, options.stop);
  if (key == "stream") return fields::read_bool(value, key, options.stream);
  if (key == "stream_options") return read_stream_options(value, options);
  if (key == "user") return fields::read_opt_string(value, key, options.user);
  if (key == "priority") return fields::read_int32(value, key, kInt32Min, kInt32Max, options.priority);
  if (key == "timeout") return read_timeout(value, options.timeout_s);
  handled = false;
  return std::nullopt;
}

Error check_generation_options(const Json& body, const GenerationOptions& options) {
  if (options.model.empty()) {
    auto it = body.find("model");
    if (it == body.end() || it->is_null()) return fields::missing_field("model");
    return invalid_request("'model' must not be empty.", "model");
  }
  auto so = body.find("stream_options");
  if (so != body.end() && !so->is_null() && !options.stream) {
    return invalid_request("'stream_options' is only allowed when 'stream' is true.", "stream_options");
  }
  return std::nullopt;
}

}  // namespace sluice::proto
