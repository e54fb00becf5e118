#pragma once
// register_model() opens and validates one configured GGUF file, Hugging Face text
// model folder or Qwen3-TTS checkpoint folder, before anything is loaded; ModelServices (model_services.h)
// keeps what it returns beside the model's service.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "engine/loader/gguf_file.h"
#include "engine/model_info.h"

namespace sluice::server {

using engine::ModelInfo;

struct LoadedModel {
  ModelInfo info;
  std::shared_ptr<const loader::GgufFile> file;  // keeps the mapping alive for the engine; null for folders
  bool is_speech() const { return info.kind == "speech"; }
};

inline constexpr std::string_view kSupportedArchitectures[] = {"llama", "qwen3", "gemma3"};

// Opens config.path and checks that it is a model this build can serve: a GGUF file,
// a folder whose config.json is a Qwen3-TTS checkpoint (kind "speech"), or another
// folder with config.json, safetensors and a tokenizer (a text model). Throws
// loader::LoadError naming the file and what is wrong. Logs one line on success.
LoadedModel register_model(const config::ModelConfig& config);

// The file-type label of a GGUF file: general.file_type in llama.cpp's llama_ftype
// numbering ("Q4_K_M"), or else the dtype holding most weight elements.
std::string file_type_label(const loader::GgufFile& file);

}  // namespace sluice::server
