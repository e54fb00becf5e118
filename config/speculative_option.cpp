#include "config/speculative_option.h"

#include <string>
#include <vector>

#include "config/option_table.h"

namespace sluice::config::detail {
namespace {

using nlohmann::json;

struct IntegerField {
  const char* name;
  int64_t SpeculativeModelConfig::*member;
  int64_t lo, hi;
};

// k beyond 16 only adds rows the target nearly never accepts; n-grams past 32 tokens
// find nothing a shorter one would not.
constexpr IntegerField kIntegers[] = {
    {"num_speculative_tokens", &SpeculativeModelConfig::num_speculative_tokens, 1, 16},
    {"prompt_lookup_min", &SpeculativeModelConfig::prompt_lookup_min, 1, 32},
    {"prompt_lookup_max", &SpeculativeModelConfig::prompt_lookup_max, 1, 32},
    {"disable_by_batch_size", &SpeculativeModelConfig::disable_by_batch_size, 1, 4096},
};

const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names = {"method", "model", "num_speculative_tokens", "prompt_lookup_min",
                                                 "prompt_lookup_max", "disable_by_batch_size"};
  return names;
}

}  // namespace

SpeculativeModelConfig parse_speculative_config(const json& value, std::string_view key, std::string_view origin) {
  if (!value.is_object()) fail_type(key, "an object such as {\"method\": \"ngram\"}", value, origin);
  SpeculativeModelConfig out;
  for (const auto& [name, field] : value.items()) {
    const std::string field_key = std::string(key) + "." + name;
    if (name == "method") {
      if (!field.is_string()) fail_type(field_key, "a string", field, origin);
      out.method = field.get<std::string>();
      if (out.method != "none" && out.method != "ngram" && out.method != "draft_model")
        fail(field_key, "must be one of none, ngram, draft_model, got " + quote(out.method), origin);
      continue;
    }
    if (name == "model") {
      if (!field.is_string() || field.get<std::string>().empty())
        fail_type(field_key, "the path of the draft model", field, origin);
      out.model = field.get<std::string>();
      continue;
    }
    const IntegerField* spec = nullptr;
    for (const IntegerField& f : kIntegers)
      if (name == f.name) spec = &f;
    if (spec == nullptr) fail(field_key, "unknown key" + suggestion(name, field_names()), origin);
    if (!field.is_number_integer()) fail_type(field_key, "an integer", field, origin);
    const int64_t v = field.is_number_unsigned() && field.get<uint64_t>() > uint64_t{1} << 40
                          ? spec->hi + 1
                          : field.get<int64_t>();
    if (v < spec->lo || v > spec->hi)
      fail(field_key, "must be between " + std::to_string(spec->lo) + " and " + std::to_string(spec->hi) +
                          ", got " + field.dump(), origin);
    out.*spec->member = v;
  }
  if (out.prompt_lookup_min > out.prompt_lookup_max)
    fail(std::string(key) + ".prompt_lookup_min",
         "must be at most prompt_lookup_max (" + std::to_string(out.prompt_lookup_max) + "), got " +
             std::to_string(out.prompt_lookup_min), origin);
  if (out.method == "draft_model" && out.model.empty())
    fail(std::string(key) + ".model", "is required with method draft_model (the draft model's path)", origin);
  if (out.method != "draft_model" && !out.model.empty())
    fail(std::string(key) + ".model", "is only read with method draft_model, got method " + quote(out.method),
         origin);
  return out;
}

}  // namespace sluice::config::detail
