#pragma once
// The generation-defaults object of the config: the daemon-wide generation_config
// (flag --generation-config '{"temperature": 0.7, "max_tokens": 256}') and a model
// entry's "generation". Keys and ranges are the request's.
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/option_table.h"

namespace sluice::config::detail {

// Throws ConfigError naming `key` (and the field), as every option does.
GenerationConfig parse_generation_config(const nlohmann::json& value, std::string_view key,
                                         std::string_view origin);

OptionSpec generation_config_option();

}  // namespace sluice::config::detail
