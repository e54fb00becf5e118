#include "proto/generation_options.h"

#include <cmath>
#include <limits>

#include "engine/request.h"

namespace sluice::proto {

using fields::Error;
using fields::Json;

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

Error read_stream_options(const Json& v, GenerationOptions& options, const ParseOptions& parse) {
  if (v.is_null()) return std::nullopt;
  if (!v.is_object()) return fields::type_error("stream_options", "an object", v);
  for (const auto& [key, value] : v.items()) {
    const std::string param = "stream_options." + key;
    if (key == "include_usage") {
      if (auto e = fields::read_bool(value, param, options.include_usage)) return e;
    } else if (key == "continuous_usage_stats") {
      if (auto e = fields::read_bool(value, param, options.continuous_usage_stats)) return e;
    } else if (key == "include_obfuscation") {
      // OpenAI pads chunks against side channels; sluice adds no padding to remove.
      bool ignored = false;
      if (auto e = fields::read_bool(value, param, ignored)) return e;
      options.ignored_fields.push_back(param);
    } else if (auto e = unknown_key(param, options, parse)) {
      return e;
    }
  }
  return std::nullopt;
}

Error read_stop_token_ids(const Json& v, std::vector<int32_t>& out) {
  if (v.is_null()) return std::nullopt;
  if (v.is_array() && v.size() > engine::kMaxStopTokenIds) {
    return invalid_request("'stop_token_ids' may hold at most " + std::to_string(engine::kMaxStopTokenIds) +
                               " token ids.",
                           "stop_token_ids");
  }
  return fields::read_token_ids(v, "stop_token_ids", out);
}

Error read_priority(const Json& v, GenerationOptions& options, const ParseOptions& parse) {
  if (!parse.allow_priority) {
    // Accepted and ignored: any integer, whatever its range (docs/configuration.md, `allow_priority`).
    const bool integral = v.is_number_integer() || (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>());
    if (!v.is_null() && !integral) return fields::type_error("priority", "an integer", v);
    if (!v.is_null()) options.ignored_fields.push_back("priority");
    return std::nullopt;
  }
  return fields::read_int32(v, "priority", -kMaxPriority, kMaxPriority, options.priority);
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

Error unknown_key(const std::string& param, GenerationOptions& options, const ParseOptions& parse) {
  return fields::FieldPolicy(parse.strict_fields, options.ignored_fields).unknown(param);
}

Error apply_generation_field(const std::string& key, const Json& value, GenerationOptions& options,
                             bool& handled, const ParseOptions& parse) {
  const fields::FieldPolicy policy(parse.strict_fields, options.ignored_fields);
  if (auto e = apply_structured_output_field(key, value, options.structured_output, handled, policy); e || handled)
    return e;
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
  if (key == "logit_bias") return fields::read_logit_bias(value, key, engine::kMaxLogitBias, s.logit_bias);
  if (key == "seed") return fields::read_seed(value, key, s.seed);
  if (key == "ignore_eos") return fields::read_bool(value, key, s.ignore_eos);
  if (key == "n") return fields::read_int32(value, key, 1, engine::kMaxChoices, s.n);
  if (key == "stop") return fields::read_stop(value, key, options.stop);
  if (key == "stream") return fields::read_bool(value, key, options.stream);
  if (key == "stream_options") return read_stream_options(value, options, parse);
  if (key == "user") return fields::read_opt_string(value, key, options.user);
  if (key == "priority") return read_priority(value, options, parse);
  if (key == "timeout") return read_timeout(value, options.timeout_s);
  if (key == "min_tokens") return fields::read_int32(value, key, 0, kInt32Max, s.min_tokens);
  if (key == "stop_token_ids") return read_stop_token_ids(value, options.stop_token_ids);
  if (key == "include_stop_str_in_output") return fields::read_bool(value, key, options.include_stop_str_in_output);
  if (key == "skip_special_tokens") return fields::read_bool(value, key, options.skip_special_tokens);
  if (key == "speculative") return fields::read_bool(value, key, options.speculative);
  if (key == "add_special_tokens") {
    bool add = false;
    if (auto e = fields::read_bool(value, key, add)) return e;
    if (!value.is_null()) options.add_special_tokens = add;
    return std::nullopt;
  }
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
  const auto& s = options.sampling;
  if (s.min_tokens > 0 && s.max_tokens && s.min_tokens > *s.max_tokens) {
    return invalid_request("'min_tokens' (" + std::to_string(s.min_tokens) + ") must not exceed 'max_tokens' (" +
                               std::to_string(*s.max_tokens) + ").",
                           "min_tokens");
  }
  return std::nullopt;
}

}  // namespace sluice::proto
