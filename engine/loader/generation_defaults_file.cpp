#include "engine/loader/generation_defaults_file.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <optional>

#include "engine/loader/json_file.h"
#include "engine/loader/load_error.h"

namespace sluice::loader {
namespace {

namespace fs = std::filesystem;

// Keeps `defaults` only if every field is one a request could send; else warns.
engine::GenerationDefaults checked(engine::GenerationDefaults defaults, const std::string& source) {
  engine::GenerationDefaults kept;
  // Field by field, so one bad value does not drop the good ones.
  auto keep = [&](auto member, const char* name) {
    engine::GenerationDefaults one;
    one.*member = defaults.*member;
    const std::string error = engine::validate(one);
    if (error.empty()) {
      kept.*member = defaults.*member;
    } else {
      spdlog::warn("{}: ignoring the model's default {}: {}", source, name, error);
    }
  };
  keep(&engine::GenerationDefaults::temperature, "temperature");
  keep(&engine::GenerationDefaults::top_p, "top_p");
  keep(&engine::GenerationDefaults::top_k, "top_k");
  keep(&engine::GenerationDefaults::min_p, "min_p");
  keep(&engine::GenerationDefaults::presence_penalty, "presence_penalty");
  keep(&engine::GenerationDefaults::frequency_penalty, "frequency_penalty");
  keep(&engine::GenerationDefaults::repetition_penalty, "repetition_penalty");
  keep(&engine::GenerationDefaults::max_tokens, "max_tokens");
  return kept;
}

std::optional<float> gguf_float(const GgufFile& file, const char* key) {
  if (auto v = file.get_float(key)) return static_cast<float>(*v);
  if (auto v = file.get_int(key)) return static_cast<float>(*v);  // a whole number written as an integer
  return std::nullopt;
}

std::optional<float> json_float(const nlohmann::json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_number()) return std::nullopt;
  return it->get<float>();
}

std::optional<int32_t> json_int(const nlohmann::json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || !it->is_number_integer()) return std::nullopt;
  const auto v = it->get<int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) return std::nullopt;
  return static_cast<int32_t>(v);
}

}  // namespace

engine::GenerationDefaults generation_defaults_from_gguf(const GgufFile& file) {
  engine::GenerationDefaults d;
  d.temperature = gguf_float(file, "general.sampling.temp");
  d.top_p = gguf_float(file, "general.sampling.top_p");
  d.min_p = gguf_float(file, "general.sampling.min_p");
  d.repetition_penalty = gguf_float(file, "general.sampling.penalty_repeat");
  if (auto k = file.get_int("general.sampling.top_k")) {
    d.top_k = *k > INT32_MAX ? INT32_MAX : static_cast<int32_t>(*k);
  }
  return checked(d, file.path().string());
}

engine::GenerationDefaults read_generation_defaults(const std::string& path) {
  if (!fs::is_directory(path)) return generation_defaults_from_gguf(GgufFile::open(path));
  const fs::path file = fs::path(path) / "generation_config.json";
  if (!fs::exists(file)) return {};
  const nlohmann::json config = detail::parse_json_file(file, 1 << 20);
  if (!config.is_object()) throw LoadError(file.string(), "expected a JSON object");
  engine::GenerationDefaults d;
  d.temperature = json_float(config, "temperature");
  d.top_p = json_float(config, "top_p");
  d.top_k = json_int(config, "top_k");
  d.min_p = json_float(config, "min_p");
  d.repetition_penalty = json_float(config, "repetition_penalty");
  d.max_tokens = json_int(config, "max_new_tokens");
  return checked(d, file.string());
}

}  // namespace sluice::loader
