#include "engine/generation_defaults.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace sluice::engine {
namespace {

template <typename T>
void take(std::optional<T>& out, const std::optional<T>& top) {
  if (top) out = top;
}

template <typename T>
void set_if_missing(bool given, const std::optional<T>& value, T& out) {
  if (!given && value) out = *value;
}

template <typename T>
void describe_one(std::string& out, const char* name, const std::optional<T>& value) {
  if (!value) return;
  if (!out.empty()) out += ' ';
  out += fmt::format("{}={}", name, *value);
}

std::string check_range(const char* name, const std::optional<float>& value, double lo, double hi, bool lo_open) {
  if (!value) return "";
  const double v = *value;
  const bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi;
  if (ok) return "";
  return fmt::format("{} must be in {}{}, {}], got {}", name, lo_open ? "(" : "[", lo, hi, v);
}

}  // namespace

bool GenerationDefaults::empty() const { return describe().empty(); }

std::string GenerationDefaults::describe() const {
  std::string out;
  describe_one(out, "temperature", temperature);
  describe_one(out, "top_p", top_p);
  describe_one(out, "top_k", top_k);
  describe_one(out, "min_p", min_p);
  describe_one(out, "presence_penalty", presence_penalty);
  describe_one(out, "frequency_penalty", frequency_penalty);
  describe_one(out, "repetition_penalty", repetition_penalty);
  describe_one(out, "max_tokens", max_tokens);
  describe_one(out, "unbounded_max_tokens", unbounded_max_tokens);
  return out;
}

GenerationDefaults overlay(const GenerationDefaults& base, const GenerationDefaults& top) {
  GenerationDefaults out = base;
  take(out.temperature, top.temperature);
  take(out.top_p, top.top_p);
  take(out.top_k, top.top_k);
  take(out.min_p, top.min_p);
  take(out.presence_penalty, top.presence_penalty);
  take(out.frequency_penalty, top.frequency_penalty);
  take(out.repetition_penalty, top.repetition_penalty);
  take(out.max_tokens, top.max_tokens);
  take(out.unbounded_max_tokens, top.unbounded_max_tokens);
  return out;
}

SamplingParams apply_generation_defaults(const GenerationDefaults& defaults, const SamplingFieldsGiven& given,
                                         SamplingParams params, int64_t num_prompt_tokens, int64_t max_model_len) {
  set_if_missing(given.temperature, defaults.temperature, params.temperature);
  set_if_missing(given.top_p, defaults.top_p, params.top_p);
  set_if_missing(given.top_k, defaults.top_k, params.top_k);
  set_if_missing(given.min_p, defaults.min_p, params.min_p);
  set_if_missing(given.presence_penalty, defaults.presence_penalty, params.presence_penalty);
  set_if_missing(given.frequency_penalty, defaults.frequency_penalty, params.frequency_penalty);
  set_if_missing(given.repetition_penalty, defaults.repetition_penalty, params.repetition_penalty);
  const int64_t room = std::max<int64_t>(1, max_model_len - num_prompt_tokens);
  if (given.max_tokens) return params;  // even null ("up to the context") is the client's choice
  if (defaults.max_tokens) params.max_tokens = *defaults.max_tokens;
  if (!params.max_tokens && defaults.unbounded_max_tokens) params.max_tokens = *defaults.unbounded_max_tokens;
  if (params.max_tokens) params.max_tokens = static_cast<int32_t>(std::min<int64_t>(*params.max_tokens, room));
  return params;
}

std::string validate(const GenerationDefaults& d) {
  for (std::string error : {check_range("temperature", d.temperature, 0.0, 2.0, false),
                            check_range("top_p", d.top_p, 0.0, 1.0, true),
                            check_range("min_p", d.min_p, 0.0, 1.0, false),
                            check_range("presence_penalty", d.presence_penalty, -2.0, 2.0, false),
                            check_range("frequency_penalty", d.frequency_penalty, -2.0, 2.0, false),
                            check_range("repetition_penalty", d.repetition_penalty, 0.0, 2.0, true)})
    if (!error.empty()) return error;
  if (d.top_k && *d.top_k < -1) return fmt::format("top_k must be -1, 0 (off) or at least 1, got {}", *d.top_k);
  if (d.max_tokens && *d.max_tokens < 1) return fmt::format("max_tokens must be at least 1, got {}", *d.max_tokens);
  if (d.unbounded_max_tokens && *d.unbounded_max_tokens < 1)
    return fmt::format("default max_tokens must be at least 1, got {}", *d.unbounded_max_tokens);
  return "";
}

}  // namespace sluice::engine
