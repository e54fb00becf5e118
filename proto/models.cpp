#include "proto/models.h"

#include <nlohmann/json.hpp>

namespace sluice::proto {

std::vector<std::string> model_endpoints(const engine::ModelInfo& model) {
  if (model.kind == "speech") return {"/v1/audio/speech"};
  std::vector<std::string> routes = {"/v1/completions"};
  if (model.has_chat_template) {
    for (const char* route : {"/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens"})
      routes.emplace_back(route);
  }
  for (const char* route : {"/v1/embeddings", "/tokenize", "/detokenize"}) routes.emplace_back(route);
  return routes;
}

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
        {"backend", model.backend},
        // The routes that accept this model: a text model without a chat template
        // serves no chat-shaped route, a speech model only speech.
        {"endpoints", model_endpoints(model)}}},
  };
}

nlohmann::ordered_json model_list(const std::vector<engine::ModelInfo>& models) {
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const auto& model : models) data.push_back(model_object(model));
  return {{"object", "list"}, {"data", data}};
}

}  // namespace sluice::proto
