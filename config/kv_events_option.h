#pragma once
// The kv_events_config option: vLLM's --kv-events-config object, with vLLM's keys
// (enable_kv_cache_events, publisher, endpoint, replay_endpoint, buffer_steps, hwm,
// max_queue_size, topic) and sluice's event_layout, so a vLLM deployment's JSON
// works unchanged.
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config/option_table.h"

namespace sluice::config::detail {

// Throws ConfigError naming `key` and the field.
KvEventsConfig parse_kv_events_config(const nlohmann::json& value, std::string_view key, std::string_view origin);

OptionSpec kv_events_config_option();

}  // namespace sluice::config::detail
