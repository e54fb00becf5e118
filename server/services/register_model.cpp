#include "server/services/register_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <utility>

#include "backends/backend_factory.h"
#include "engine/loader/json_file.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/model/tts_config.h"

namespace sluice::server {
namespace {

using loader::GgufFile;
using loader::LoadError;
namespace tts = engine::tts;

// llama.cpp's llama_ftype numbering, as written to general.file_type by its converters
// and quantizers; ids 4-6 are formats GGML has since dropped.
constexpr std::pair<uint32_t, std::string_view> kFileTypeNames[] = {
    {0, "F32"},       {1, "F16"},       {2, "Q4_0"},      {3, "Q4_1"},
    {4, "Q4_1_SOME_F16"},               {7, "Q8_0"},      {8, "Q5_0"},
    {9, "Q5_1"},      {10, "Q2_K"},     {11, "Q3_K_S"},   {12, "Q3_K_M"},
    {13, "Q3_K_L"},   {14, "Q4_K_S"},   {15, "Q4_K_M"},   {16, "Q5_K_S"},
    {17, "Q5_K_M"},   {18, "Q6_K"},     {19, "IQ2_XXS"},  {20, "IQ2_XS"},
    {21, "Q2_K_S"},   {22, "IQ3_XS"},   {23, "IQ3_XXS"},  {24, "IQ1_S"},
    {25, "IQ4_NL"},   {26, "IQ3_S"},    {27, "IQ3_M"},    {28, "IQ2_S"},
    {29, "IQ2_M"},    {30, "IQ4_XS"},   {31, "IQ1_M"},    {32, "BF16"},
    {36, "TQ1_0"},    {37, "TQ2_0"},    {38, "MXFP4_MOE"}, {39, "NVFP4"},
    {40, "Q1_0"},
};
// Set by llama.cpp when it guessed the file type instead of being told.
constexpr uint64_t kFileTypeGuessedFlag = 1024;

// The backend this model will run on: cpu, or cuda:N when configured (or `auto`
// finds a GPU). Refused here, before any weight is read, when this build or this
// machine cannot provide it.
std::string resolve_backend(const config::ModelConfig& config) {
  try {
    return backends::resolve_backend(config.backend).name();
  } catch (const std::invalid_argument& e) {
    throw LoadError(config.path, e.what());
  }
}

std::string default_model_id(const std::string& path) {
  std::filesystem::path p(path);
  if (!p.has_filename()) p = p.parent_path();  // "models/SmolLM2/" names the folder
  std::string name = p.filename().string();
  constexpr std::string_view kSuffix = ".gguf";
  if (name.size() > kSuffix.size() && name.ends_with(kSuffix)) {
    name.resize(name.size() - kSuffix.size());
  }
  return name;
}

// Cosmetic keys must not keep a model from loading, so a wrong type just means absent.
std::string optional_string(const GgufFile& file, std::string_view key) {
  const loader::GgufValue* value = file.find(key);
  if (value == nullptr) return {};
  return std::string(value->to_string().value_or(""));
}

int64_t required_positive(const GgufFile& file, const std::string& key) {
  const std::optional<int64_t> value = file.get_int(key);
  if (!value) throw LoadError(file.path(), "missing required key '" + key + "'");
  if (*value <= 0) {
    throw LoadError(file.path(), "key '" + key + "' is " + std::to_string(*value) +
                                     ", expected a positive integer");
  }
  return *value;
}

std::string check_architecture(const GgufFile& file) {
  const std::optional<std::string_view> arch = file.get_string("general.architecture");
  if (!arch) throw LoadError(file.path(), "missing required key 'general.architecture'");
  for (const std::string_view supported : kSupportedArchitectures) {
    if (*arch == supported) return std::string(*arch);
  }
  std::string names;
  for (const std::string_view supported : kSupportedArchitectures) {
    if (!names.empty()) names += ", ";
    names += supported;
  }
  throw LoadError(file.path(),
                  "unsupported architecture '" + std::string(*arch) + "' (supported: " + names + ")");
}

std::string format_count(uint64_t count) {
  char buf[32];
  if (count >= 1'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.2fB", static_cast<double>(count) / 1e9);
  } else if (count >= 1'000'000) {
    std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(count) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(count));
  }
  return buf;
}

// A folder is a speech model when its config.json says model_type qwen3_tts; any
// other path goes on to be opened as GGUF (whose error then names it).
bool is_tts_folder(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) return false;
  const std::filesystem::path config = path / "config.json";
  if (!std::filesystem::is_regular_file(config, ec)) return false;
  constexpr uint64_t kMaxConfigBytes = 1 << 20;
  const nlohmann::json root = loader::detail::parse_json_file(config, kMaxConfigBytes);
  return root.is_object() && root.value("model_type", std::string()) == "qwen3_tts";
}

// Bytes of the checkpoint's weights: the talker's and the codec's safetensors.
uint64_t safetensors_bytes(const std::filesystem::path& dir) {
  uint64_t total = 0;
  for (const std::filesystem::path& folder : {dir, dir / "speech_tokenizer"}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".safetensors") total += entry.file_size();
    }
  }
  return total;
}

uint64_t num_elements(const loader::TensorSet& tensors) {
  uint64_t total = 0;
  for (const std::string& name : tensors.names()) {
    const std::optional<loader::WeightView> view = tensors.find(name);  // named: the loop reads its shape
    uint64_t n = 1;
    for (const int64_t d : view->shape) n *= static_cast<uint64_t>(d);
    total += n;
  }
  return total;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The served context (the operator's, at most the trained one) and the log line of
// a registered text model; `info` has everything else.
LoadedModel info_checked_for_context(const config::ModelConfig& config, ModelInfo info) {
  if (config.context_length > info.trained_context_length) {
    throw LoadError(config.path, "context_length " + std::to_string(config.context_length) +
                                     " exceeds the model's trained context length " +
                                     std::to_string(info.trained_context_length) +
                                     "; lower context_length (--context-length, or the model entry's key)");
  }
  info.quantize = config.quantize;
  info.context_length_set = config.context_length != 0;
  info.context_length = info.context_length_set ? config.context_length : info.trained_context_length;
  info.created = unix_now();
  spdlog::info("model '{}': {} {}, {} params, context {} (trained {}), backend {}, {}", info.id,
               info.architecture, info.file_type, format_count(info.num_parameters), info.context_length,
               info.trained_context_length, info.backend, info.path);
  return LoadedModel{std::move(info), nullptr};
}

// A Qwen3-TTS checkpoint folder: its configs are read and checked here (the weights
// are bound when its service loads). Its "context" is the talker's positions.
LoadedModel register_speech_model(const config::ModelConfig& config, ModelInfo info) {
  const std::filesystem::path dir(config.path);
  const tts::TtsConfig tts = tts::read_tts_config(dir);
  info.kind = "speech";
  info.architecture = "qwen3_tts";
  info.display_name = std::string("Qwen3-TTS ") + std::string(tts::tts_kind_name(tts.kind)) + " " + tts.model_size;
  info.owned_by = "sluice";
  info.trained_context_length = tts.talker.context_length;
  info.context_length_set = false;  // a speech sequence is its prompt plus max_new_tokens frames
  info.context_length = info.trained_context_length;
  info.quantize = config.quantize;
  const auto talker = loader::open_tensor_set(dir);
  const auto codec = loader::open_tensor_set(dir / "speech_tokenizer");
  info.num_parameters = num_elements(*talker) + num_elements(*codec);
  info.file_type = config.quantize == "none" ? "safetensors" : config.quantize;
  info.file_bytes = safetensors_bytes(dir);
  info.created = unix_now();
  spdlog::info("model '{}': {} {} ({} speakers), {} params, backend {}, {}", info.id, info.architecture,
               tts::tts_kind_name(tts.kind), tts.speakers.size(), format_count(info.num_parameters), info.backend,
               info.path);
  return LoadedModel{std::move(info), nullptr};
}

// The dtype holding most matrix elements of a safetensors folder ("BF16").
std::string dominant_dtype(const loader::TensorSet& tensors) {
  std::map<backends::DType, uint64_t> num_elements_by_dtype;
  for (const std::string& name : tensors.names()) {
    const std::optional<loader::WeightView> view = tensors.find(name);
    if (view->shape.size() < 2) continue;
    uint64_t n = 1;
    for (const int64_t d : view->shape) n *= static_cast<uint64_t>(d);
    num_elements_by_dtype[view->dtype] += n;
  }
  if (num_elements_by_dtype.empty()) return "unknown";
  const auto most = std::max_element(num_elements_by_dtype.begin(), num_elements_by_dtype.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
  return std::string(backends::dtype_name(most->first));
}

// A Hugging Face text model folder (config.json, safetensors, tokenizer.json): the
// same checks as a GGUF file, made by opening its weights the way the engine will
// (config.json's keys, every tensor's name, dtype and shape), then dropped: the
// service reopens them (mmap, no copy).
LoadedModel register_text_folder(const config::ModelConfig& config, ModelInfo info) {
  const std::filesystem::path dir(config.path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir / "tokenizer.json", ec) &&
      !std::filesystem::is_regular_file(dir / "vocab.json", ec)) {
    throw LoadError(dir / "tokenizer.json", "missing: a model folder needs its tokenizer (tokenizer.json, or "
                                            "vocab.json and merges.txt)");
  }
  const std::unique_ptr<loader::WeightSource> weights = loader::open_safetensors_weights(dir);
  const engine::ModelHparams& hp = weights->hparams();
  info.architecture = hp.architecture;
  info.trained_context_length = hp.context_length;
  if (info.trained_context_length <= 0) {
    throw LoadError(dir / "config.json", "max_position_embeddings is " + std::to_string(hp.context_length) +
                                             ", expected a positive integer");
  }
  const auto tensors = loader::open_tensor_set(dir);
  info.num_parameters = num_elements(*tensors);
  info.file_type = dominant_dtype(*tensors);
  info.file_bytes = safetensors_bytes(dir);
  info.display_name = dir.filename().string();
  info.owned_by = "sluice";
  return info_checked_for_context(config, std::move(info));
}

}  // namespace

std::string file_type_label(const GgufFile& file) {
  if (const loader::GgufValue* value = file.find("general.file_type")) {
    if (const std::optional<uint64_t> ftype = value->to_uint()) {
      const uint64_t id = *ftype & ~kFileTypeGuessedFlag;
      for (const auto& [known, name] : kFileTypeNames) {
        if (known == id) return std::string(name);
      }
    }
  }
  // Norms and biases are 1-D and usually F32 in any file, so only matrices vote.
  std::map<backends::DType, uint64_t> num_elements_by_dtype;
  for (const loader::GgufTensorInfo& tensor : file.tensors()) {
    if (tensor.shape.size() >= 2) num_elements_by_dtype[tensor.dtype] += tensor.num_elements;
  }
  if (num_elements_by_dtype.empty()) {
    for (const loader::GgufTensorInfo& tensor : file.tensors()) {
      num_elements_by_dtype[tensor.dtype] += tensor.num_elements;
    }
  }
  if (num_elements_by_dtype.empty()) return "unknown";
  const auto most = std::max_element(
      num_elements_by_dtype.begin(), num_elements_by_dtype.end(),
      [](const auto& a, const auto& b) { return a.second < b.second; });
  return std::string(backends::dtype_name(most->first));
}

LoadedModel register_model(const config::ModelConfig& config) {
  ModelInfo info;
  info.path = config.path;
  info.id = config.name.empty() ? default_model_id(config.path) : config.name;
  info.backend = resolve_backend(config);
  if (config.context_length < 0) {
    throw LoadError(config.path, "context_length " + std::to_string(config.context_length) +
                                     " is negative (0 means the trained context length)");
  }
  if (is_tts_folder(config.path)) return register_speech_model(config, std::move(info));
  std::error_code ec;
  if (std::filesystem::is_directory(config.path, ec)) return register_text_folder(config, std::move(info));

  auto file = std::make_shared<const GgufFile>(GgufFile::open(config.path));
  info.architecture = check_architecture(*file);
  const std::string& arch = info.architecture;
  info.trained_context_length = required_positive(*file, arch + ".context_length");
  required_positive(*file, arch + ".embedding_length");
  required_positive(*file, arch + ".block_count");
  if (!file->get_string("tokenizer.ggml.model")) {
    throw LoadError(config.path, "missing required key 'tokenizer.ggml.model'");
  }
  if (file->tensors().empty()) throw LoadError(config.path, "the file contains no tensors");
  if (file->find_tensor("token_embd.weight") == nullptr) {
    throw LoadError(config.path, "missing required tensor 'token_embd.weight'");
  }

  info.display_name = optional_string(*file, "general.name");
  info.owned_by = optional_string(*file, "general.organization");
  if (info.owned_by.empty()) info.owned_by = "sluice";
  info.file_type = file_type_label(*file);
  for (const loader::GgufTensorInfo& tensor : file->tensors()) {
    info.num_parameters += tensor.num_elements;
  }
  info.file_bytes = file->file_size();
  return LoadedModel{info_checked_for_context(config, std::move(info)).info, std::move(file)};
}

}  // namespace sluice::server
