#pragma once
// One served model as the API and the logs describe it (/v1/models, metrics labels).
// Plain data, so proto/ can render it without knowing how models are registered.
#include <cstdint>
#include <string>

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
  bool has_chat_template = false;  // text: chat-shaped routes (chat, responses, messages) serve it
};

}  // namespace sluice::engine
