#include "proto/models.h"

#include <nlohmann/json.hpp>

namespace sluice::proto {

nlohmann::ordered_json model_object(const engine::ModelInfo& model) {
  return {
      {"id", model.id},
      {"object", "model"},
      {"created", model.created},
      {"owned_by", model.owned_by},
      {"context_length", model.context_length},
      // vLLM's name for the same number, so its clients find it too.
      {"max_model_len", model.context_length},
      {"meta",
       {{"architecture", model.architecture},
        // "text" (completions, chat) or "speech" (/v1/audio/speech).
        {"kind", model.kind},
        {"name", model.display_name},
        {"file_type", model.file_type},
        {"num_parameters", model.num_parameters},
        {"file_bytes", model.file_bytes},
        {"trained_context_length", model.trained_context_length},
        {"backend", model.backend}}},
  };
}

nlohmann::ordered_json model_list(const std::vector<engine::ModelInfo>& models) {
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const auto& model : models) data.push_back(model_object(model));
  return {{"object", "list"}, {"data", data}};
}

}  // namespace sluice::proto
