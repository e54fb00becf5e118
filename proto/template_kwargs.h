#pragma once
// vLLM's chat_template_kwargs: a request's JSON object turned into chat template
// variables, each value as the template would see it after json.loads in Python.
#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"

namespace sluice::proto {

// Sets every key of `kwargs` (a JSON object) as a variable of `options`, replacing a
// variable of the same name.
void add_template_variables(const nlohmann::ordered_json& kwargs, chat::RenderOptions& options);

// A JSON value as the template sees it (objects keep their order when ordered).
chat::Value template_value(const nlohmann::json& value);
chat::Value template_value(const nlohmann::ordered_json& value);

}  // namespace sluice::proto
