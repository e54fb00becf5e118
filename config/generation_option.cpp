#include "config/generation_option.h"

#include <cmath>
#include <string>
#include <vector>

#include "config/config_loader.h"

namespace sluice::config::detail {
namespace {

using nlohmann::json;

struct RealField {
  const char* name;
  std::optional<double> GenerationConfig::*member;
  double lo, hi;
  bool lo_open;
};

constexpr RealField kReals[] = {
    {"temperature", &GenerationConfig::temperature, 0.0, 2.0, false},
    {"top_p", &GenerationConfig::top_p, 0.0, 1.0, true},
    {"min_p", &GenerationConfig::min_p, 0.0, 1.0, false},
    {"presence_penalty", &GenerationConfig::presence_penalty, -2.0, 2.0, false},
    {"frequency_penalty", &GenerationConfig::frequency_penalty, -2.0, 2.0, false},
    {"repetition_penalty", &GenerationConfig::repetition_penalty, 0.0, 2.0, true},
};

const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names = {"temperature",       "top_p",     "top_k",
                                                 "min_p",             "presence_penalty",
                                                 "frequency_penalty", "repetition_penalty",
                                                 "max_tokens"};
  return names;
}

std::string number(double v) {  // 2, not 2.0
  std::string out = json(v).dump();
  if (out.ends_with(".0")) out.resize(out.size() - 2);
  return out;
}

std::string show(const GenerationConfig& g) {
  json out = json::object();
  for (const RealField& f : kReals)
    if (g.*f.member) out[f.name] = *(g.*f.member);
  if (g.top_k) out["top_k"] = *g.top_k;
  if (g.max_tokens) out["max_tokens"] = *g.max_tokens;
  return out.empty() ? "{} (the model's own)" : out.dump();
}

}  // namespace

GenerationConfig parse_generation_config(const json& value, std::string_view key, std::string_view origin) {
  if (!value.is_object()) fail_type(key, "an object such as {\"temperature\": 0.7}", value, origin);
  GenerationConfig out;
  for (const auto& [name, field] : value.items()) {
    const std::string field_key = std::string(key) + "." + name;
    bool known = false;
    for (const RealField& f : kReals) {
      if (name != f.name) continue;
      known = true;
      if (!field.is_number()) fail_type(field_key, "a number", field, origin);
      const double v = field.get<double>();
      if (!((f.lo_open ? v > f.lo : v >= f.lo) && v <= f.hi))
        fail(field_key,
             "must be in " + std::string(f.lo_open ? "(" : "[") + number(f.lo) + ", " + number(f.hi) + "], got " +
                 field.dump(),
             origin);
      out.*f.member = v;
    }
    if (name == "top_k" || name == "max_tokens") {
      known = true;
      if (!field.is_number_integer()) fail_type(field_key, "an integer", field, origin);
      const bool is_top_k = name == "top_k";
      const int64_t lo = is_top_k ? -1 : 1;
      const int64_t v = field.is_number_unsigned() && field.get<uint64_t>() > (uint64_t{1} << 31)
                            ? (int64_t{1} << 31)
                            : field.get<int64_t>();
      if (v < lo || v > INT32_MAX)
        fail(field_key, std::string("must be ") + (is_top_k ? "-1, 0 (off) or" : "") + " an integer in [" +
                            std::to_string(lo) + ", 2147483647], got " + field.dump(),
             origin);
      (is_top_k ? out.top_k : out.max_tokens) = v;
    }
    if (!known) fail(field_key, "unknown key" + suggestion(name, field_names()), origin);
  }
  return out;
}

OptionSpec generation_config_option() {
  OptionSpec spec;
  spec.key = "generation_config";
  spec.flag = "--generation-config";
  spec.env = "SLUICE_GENERATION_CONFIG";
  spec.value_name = "JSON";
  spec.group = "Engine";
  spec.help =
      "Generation defaults of every model, for fields a request leaves out, over the model file's "
      "(GGUF general.sampling.*): {\"temperature\", \"top_p\", \"top_k\", \"min_p\", \"presence_penalty\", "
      "\"frequency_penalty\", \"repetition_penalty\", \"max_tokens\"}";
  spec.set_from_text = [](Config& config, std::string_view text, std::string_view origin) {
    const json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) fail("generation_config", "is not valid JSON: " + quote(text), origin);
    config.generation_config = parse_generation_config(value, "generation_config", origin);
  };
  spec.set_from_json = [](Config& config, const json& value, std::string_view origin) {
    config.generation_config = parse_generation_config(value, "generation_config", origin);
  };
  spec.show = [](const Config& config) { return show(config.generation_config); };
  return spec;
}

}  // namespace sluice::config::detail
