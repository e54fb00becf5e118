#pragma once
// A model entry's "speculative" object: {"method": "ngram", "num_speculative_tokens": 4,
// "prompt_lookup_min": 2, "prompt_lookup_max": 4, "disable_by_batch_size": 4}, or
// {"method": "draft_model", "model": "draft.gguf", "num_speculative_tokens": 4}.
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace sluice::config::detail {

// Throws ConfigError naming `key` and the field, as every option does.
SpeculativeModelConfig parse_speculative_config(const nlohmann::json& value, std::string_view key,
                                                std::string_view origin);

}  // namespace sluice::config::detail
