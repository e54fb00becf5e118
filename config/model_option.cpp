// The `models` row of the option table. Unlike the scalar keys it has a richer file
// form (an array of objects) and a text form ("[NAME=]PATH,...") for --model and
// SLUICE_MODEL. Every source replaces the whole list, and each finished list is
// validated at once so that errors can still name the source they came from.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/generation_option.h"
#include "config/option_table.h"
#include "config/speculative_option.h"

namespace sluice::config::detail {
namespace {

using nlohmann::json;

constexpr std::string_view kKey = "models";

std::string entry_key(std::size_t index, std::string_view field = {}) {
  std::string out = std::string(kKey) + "[" + std::to_string(index) + "]";
  if (!field.empty()) out += "." + std::string(field);
  return out;
}


// The served name a model gets when none is given: its file (or folder) name
// without the .gguf extension.
std::string default_name(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  std::size_t slash = path.rfind('/');
  if (slash != std::string_view::npos) path.remove_prefix(slash + 1);
  if (path.size() > 5 && path.ends_with(".gguf")) path.remove_suffix(5);
  return path == "/" || path == "." || path == ".." ? "" : std::string(path);
}

// Fills in default names and checks what no single entry can: that names are unique.
void finish(std::vector<ModelConfig>& models, std::string_view origin) {
  for (std::size_t i = 0; i < models.size(); ++i) {
    ModelConfig& model = models[i];
    if (model.path.empty()) fail(entry_key(i, "path"), "must be a non-empty path", origin);
    if (!is_valid_backend(model.backend)) {
      fail(entry_key(i, "backend"),
           "must be one of auto, cpu, cuda, cuda:N (N >= 0), got " + quote(model.backend), origin);
    }
    if (model.quantize != "none" && model.quantize != "q8_0" && model.quantize != "q4_0") {
      fail(entry_key(i, "quantize"), "must be one of none, q8_0, q4_0, got " + quote(model.quantize), origin);
    }
    if (model.codec_precision != "f32" && model.codec_precision != "int16") {
      fail(entry_key(i, "codec_precision"), "must be one of f32, int16, got " + quote(model.codec_precision), origin);
    }
    if (model.tool_call_parser != "auto" && model.tool_call_parser != "hermes" &&
        model.tool_call_parser != "llama3_json" && model.tool_call_parser != "generic" &&
        model.tool_call_parser != "none") {
      fail(entry_key(i, "tool_call_parser"),
           "must be one of auto, hermes, llama3_json, generic, none, got " + quote(model.tool_call_parser), origin);
    }
    if (model.reasoning_parser != "auto" && model.reasoning_parser != "qwen3" &&
        model.reasoning_parser != "deepseek_r1" && model.reasoning_parser != "none") {
      fail(entry_key(i, "reasoning_parser"),
           "must be one of auto, qwen3, deepseek_r1, none, got " + quote(model.reasoning_parser), origin);
    }
    if (model.pooling != "auto" && model.pooling != "last" && model.pooling != "mean") {
      fail(entry_key(i, "pooling"), "must be one of auto, last, mean, got " + quote(model.pooling), origin);
    }
    if (model.context_length < 0) {
      fail(entry_key(i, "context_length"),
           "must be >= 0 (0: the model's own), got " + std::to_string(model.context_length),
           origin);
    }
    if (model.name.empty()) model.name = default_name(model.path);
    if (model.name.empty()) {
      fail(entry_key(i, "name"), "cannot be derived from path " + quote(model.path) + "; set one",
           origin);
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (models[j].name == model.name) {
        fail(kKey,
             "duplicate model name " + quote(model.name) + " (" + entry_key(j) + " and " +
                 entry_key(i) + "); give one a distinct name with NAME=PATH or \"name\"",
             origin);
      }
    }
  }
}

// "NAME=PATH" names the model only when NAME holds no '/', so that a path such
// as "dir=x/model.gguf" or "/data/a=b.gguf" is still read as a path.
ModelConfig parse_text_entry(std::string_view item, std::size_t index, std::string_view origin) {
  ModelConfig model;
  std::size_t equals = item.find('=');
  if (equals != std::string_view::npos &&
      item.substr(0, equals).find('/') == std::string_view::npos) {
    model.name = std::string(trim(item.substr(0, equals)));
    model.path = std::string(trim(item.substr(equals + 1)));
    if (model.name.empty()) fail(entry_key(index, "name"), "empty name in " + quote(item), origin);
  } else {
    model.path = std::string(item);
  }
  return model;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// {"alloy": "vivian", ...}: request voice names to checkpoint speakers. Whether the
// speaker exists is checked when the checkpoint is loaded.
std::map<std::string, std::string> parse_voices(const json& value, const std::string& key, std::string_view origin) {
  if (!value.is_object()) fail_type(key, "an object {\"voice\": \"speaker\", ...}", value, origin);
  std::map<std::string, std::string> voices;
  for (const auto& [name, speaker] : value.items()) {
    const std::string entry = key + "." + name;
    if (name.empty()) fail(key, "voice names must not be empty", origin);
    if (!speaker.is_string() || speaker.get<std::string>().empty()) fail_type(entry, "a speaker name", speaker, origin);
    voices[lower(name)] = lower(speaker.get<std::string>());
  }
  return voices;
}

const std::vector<std::string>& entry_fields() {
  static const std::vector<std::string> fields = {
      "path",   "name",          "backend",          "context_length",  "quantize",
      "generation", "voices", "chat_template", "tool_call_parser", "reasoning_parser", "pooling",
      "codec_precision", "speculative", "voices_dir"};
  return fields;
}

ModelConfig parse_json_entry(const json& entry, std::size_t index, std::string_view origin) {
  if (entry.is_string()) return parse_text_entry(entry.get<std::string>(), index, origin);
  if (!entry.is_object()) {
    fail_type(entry_key(index), "an object {\"path\": ..., \"name\": ...} or a string", entry,
              origin);
  }
  ModelConfig model;
  for (const auto& [field, value] : entry.items()) {
    std::string key = entry_key(index, field);
    if (field == "context_length") {
      if (!value.is_number_integer()) fail_type(key, "an integer", value, origin);
      if (value.is_number_unsigned() && value.get<uint64_t>() > uint64_t{1} << 40) {
        fail(key, "must be at most 2^40, got " + value.dump(), origin);
      }
      model.context_length = value.get<int64_t>();
      continue;
    }
    if (field == "generation") {
      model.generation = parse_generation_config(value, key, origin);
      continue;
    }
    if (field == "voices") {
      model.voices = parse_voices(value, key, origin);
      continue;
    }
    if (field == "speculative") {
      model.speculative = parse_speculative_config(value, key, origin);
      continue;
    }
    std::string* target = field == "path"      ? &model.path
                          : field == "name"    ? &model.name
                          : field == "backend" ? &model.backend
                          : field == "quantize" ? &model.quantize
                          : field == "chat_template" ? &model.chat_template
                          : field == "tool_call_parser" ? &model.tool_call_parser
                          : field == "reasoning_parser" ? &model.reasoning_parser
                          : field == "pooling" ? &model.pooling
                          : field == "codec_precision" ? &model.codec_precision
                          : field == "voices_dir" ? &model.voices_dir
                                               : nullptr;
    if (target == nullptr) fail(key, "unknown key" + suggestion(field, entry_fields()), origin);
    if (!value.is_string()) fail_type(key, "a string", value, origin);
    *target = value.get<std::string>();
  }
  if (!entry.contains("path")) fail(entry_key(index, "path"), "is required", origin);
  if (entry.contains("name") && model.name.empty()) {
    fail(entry_key(index, "name"), "must not be empty (leave it out for the default)", origin);
  }
  return model;
}

}  // namespace

bool is_valid_backend(std::string_view backend) {
  if (backend == "auto" || backend == "cpu" || backend == "cuda") return true;
  if (!backend.starts_with("cuda:")) return false;
  std::string_view digits = backend.substr(5);
  int device = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), device);
  return !digits.empty() && ec == std::errc{} && end == digits.data() + digits.size() &&
         device >= 0;
}

OptionSpec models_option() {
  OptionSpec spec;
  spec.key = std::string(kKey);
  spec.flag = "--model";
  spec.env = "SLUICE_MODEL";
  spec.value_name = "[NAME=]PATH";
  spec.group = "Models";
  spec.help =
      "Model to serve: a GGUF file, a Hugging Face text model folder (safetensors) or a Qwen3-TTS "
      "checkpoint folder, named NAME or else its file name without .gguf; repeatable, "
      "comma-separated; replaces the file's list; at least one is required";
  spec.is_list = true;
  spec.set_from_text = [](Config& config, std::string_view text, std::string_view origin) {
    std::vector<std::string> items = split_list(text);
    std::vector<ModelConfig> models;
    for (std::size_t i = 0; i < items.size(); ++i) {
      models.push_back(parse_text_entry(items[i], i, origin));
    }
    finish(models, origin);
    config.models = std::move(models);
  };
  spec.set_from_json = [](Config& config, const json& value, std::string_view origin) {
    if (!value.is_array()) fail_type(kKey, "an array of model objects", value, origin);
    std::vector<ModelConfig> models;
    for (std::size_t i = 0; i < value.size(); ++i) {
      models.push_back(parse_json_entry(value[i], i, origin));
    }
    finish(models, origin);
    config.models = std::move(models);
  };
  spec.show = [](const Config& config) -> std::string {
    if (config.models.empty()) return "none";
    std::string out;
    for (const ModelConfig& model : config.models) {
      if (!out.empty()) out += "; ";
      out += model.name + "=" + model.path + " (backend " + model.backend + ", context_length " +
             (model.context_length == 0 ? "from model" : std::to_string(model.context_length)) +
             (model.quantize == "none" ? "" : ", quantize " + model.quantize) +
             (model.voices.empty() ? "" : ", " + std::to_string(model.voices.size()) + " voice(s) mapped") +
             (model.chat_template.empty() ? "" : ", chat_template " + model.chat_template) +
             (model.tool_call_parser == "auto" ? "" : ", tool_call_parser " + model.tool_call_parser) +
             (model.reasoning_parser == "auto" ? "" : ", reasoning_parser " + model.reasoning_parser) +
             (model.pooling == "auto" ? "" : ", pooling " + model.pooling) +
             (model.codec_precision == "f32" ? "" : ", codec_precision " + model.codec_precision) +
             (model.voices_dir.empty() ? "" : ", voices_dir " + model.voices_dir) +
             (model.speculative.method == "none"
                  ? ""
                  : ", speculative " + model.speculative.method +
                        (model.speculative.model.empty() ? "" : " " + model.speculative.model) + " k=" +
                        std::to_string(model.speculative.num_speculative_tokens)) +
             ")";
    }
    return out;
  };
  return spec;
}

}  // namespace sluice::config::detail
