#pragma once
// The /v1/models wire objects (OpenAI "model" and "list" shapes), built from what
// the engine knows of each registered model.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "engine/model_info.h"

namespace sluice::proto {

// The API routes that serve `model` ("/v1/chat/completions", ...).
std::vector<std::string> model_endpoints(const engine::ModelInfo& model);

// {"id","object":"model","created","owned_by","context_length","max_model_len","meta":{...}}
nlohmann::ordered_json model_object(const engine::ModelInfo& model);

// {"object":"list","data":[model, ...]}
nlohmann::ordered_json model_list(const std::vector<engine::ModelInfo>& models);

}  // namespace sluice::proto
