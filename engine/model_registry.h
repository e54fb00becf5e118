#pragma once
// The models this daemon serves: register_model() opens and validates one configured
// GGUF file or Qwen3-TTS checkpoint folder; ModelRegistry is the list that /v1/models
// and request routing read.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "engine/loader/gguf_file.h"

namespace sluice::engine {

// What the API and the logs say about a model; plain data, copied freely.
struct ModelInfo {
  std::string id;                  // served name: config name or the file name without .gguf
  std::string path;                // as configured
  std::string architecture;        // general.architecture: llama | qwen3 | gemma3; qwen3_tts
  // What the model is for: "text" (completions, chat) or "speech" (/v1/audio/speech).
  std::string kind = "text";
  std::string display_name;        // general.name, or ""
  std::string backend;             // resolved: "cpu" or "cuda:N"
  int64_t context_length = 0;      // served
  bool context_length_set = false; // the operator chose it (else the engine may shrink it)
  std::string quantize = "none";   // quantization at load: none | q8_0 | q4_0
  int64_t trained_context_length = 0;
  std::string file_type;           // "Q4_1", from general.file_type or the weights
  uint64_t num_parameters = 0;     // elements of all tensors
  uint64_t file_bytes = 0;
  int64_t created = 0;             // unix seconds at registration
  std::string owned_by;            // general.organization, or "sluice"
};

struct LoadedModel {
  ModelInfo info;
  std::shared_ptr<const loader::GgufFile> file;  // keeps the mapping alive for the engine; null for speech
  bool is_speech() const { return info.kind == "speech"; }
};

inline constexpr std::string_view kSupportedArchitectures[] = {"llama", "qwen3", "gemma3"};

// Opens config.path and checks that it is a model this build can serve: a GGUF file,
// or a folder whose config.json is a Qwen3-TTS checkpoint (kind "speech"). Throws
// loader::LoadError naming the file and what is wrong. Logs one line on success.
LoadedModel register_model(const config::ModelConfig& config);

// The file-type label of a GGUF file: general.file_type in llama.cpp's llama_ftype
// numbering ("Q4_K_M"), or else the dtype holding most weight elements.
std::string file_type_label(const loader::GgufFile& file);

// Owns the registered models. Thread-safe: HTTP threads read while a loader thread adds.
class ModelRegistry {
 public:
  // Throws std::invalid_argument when a model with the same id is registered already.
  void add(LoadedModel model);

  std::vector<ModelInfo> list() const;  // in registration order
  std::optional<ModelInfo> find(std::string_view id) const;
  std::optional<LoadedModel> find_loaded(std::string_view id) const;
  size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::vector<LoadedModel> models_;  // guarded by mutex_
};

}  // namespace sluice::engine
