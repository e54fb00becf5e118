#include "config/kv_events_option.h"

#include <string>
#include <vector>

#include "config/config_loader.h"

namespace sluice::config::detail {
namespace {

using nlohmann::json;

constexpr std::string_view kKey = "kv_events_config";

const std::vector<std::string>& field_names() {
  static const std::vector<std::string> names = {
      "enable_kv_cache_events", "publisher", "endpoint", "replay_endpoint", "buffer_steps",
      "hwm",                    "max_queue_size", "topic", "event_layout"};
  return names;
}

bool valid_endpoint(const std::string& endpoint) {
  for (std::string_view scheme : {"tcp://", "ipc://", "inproc://"})
    if (endpoint.starts_with(scheme) && endpoint.size() > scheme.size()) return true;
  return false;
}

std::string show(const KvEventsConfig& c) {
  if (!c.enabled()) return "{} (off)";
  json out = {{"enable_kv_cache_events", true}, {"endpoint", c.endpoint}, {"topic", c.topic},
              {"buffer_steps", c.buffer_steps}, {"hwm", c.hwm},           {"max_queue_size", c.max_queue_size},
              {"event_layout", c.event_layout}};
  if (!c.replay_endpoint.empty()) out["replay_endpoint"] = c.replay_endpoint;
  return out.dump();
}

}  // namespace

KvEventsConfig parse_kv_events_config(const json& value, std::string_view key, std::string_view origin) {
  if (!value.is_object())
    fail_type(key, "an object such as {\"enable_kv_cache_events\": true, \"endpoint\": \"tcp://*:5557\"}", value,
              origin);
  KvEventsConfig out;
  for (const auto& [name, field] : value.items()) {
    const std::string field_key = std::string(key) + "." + name;
    auto text = [&](std::vector<std::string> choices = {}) {
      if (!field.is_string()) fail_type(field_key, "a string", field, origin);
      std::string v = field.get<std::string>();
      if (choices.empty()) return v;
      for (const std::string& choice : choices)
        if (v == choice) return v;
      std::string rule = "must be one of";
      for (const std::string& choice : choices) rule += (choice == choices.front() ? " " : ", ") + choice;
      fail(field_key, rule + ", got " + field.dump(), origin);
    };
    auto integer = [&](int64_t lo, int64_t hi) {
      if (!field.is_number_integer()) fail_type(field_key, "an integer", field, origin);
      const bool in_range = field.is_number_unsigned() ? field.get<uint64_t>() <= static_cast<uint64_t>(hi)
                                                       : field.get<int64_t>() >= lo && field.get<int64_t>() <= hi;
      if (!in_range || field.get<int64_t>() < lo)
        fail(field_key, "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                            field.dump(), origin);
      return field.get<int64_t>();
    };
    if (name == "enable_kv_cache_events") {
      if (!field.is_boolean()) fail_type(field_key, "a boolean (true or false)", field, origin);
      out.enable_kv_cache_events = field.get<bool>();
    } else if (name == "publisher") {
      out.publisher = text({"zmq", "null"});
    } else if (name == "endpoint" || name == "replay_endpoint") {
      // vLLM writes "no replay socket" as null.
      std::string endpoint = name == "replay_endpoint" && field.is_null() ? "" : text();
      const bool optional = name == "replay_endpoint";
      if (!(optional && endpoint.empty()) && !valid_endpoint(endpoint))
        fail(field_key, "must be a ZeroMQ endpoint (tcp://HOST:PORT, ipc://PATH or inproc://NAME), got " +
                            field.dump(), origin);
      (optional ? out.replay_endpoint : out.endpoint) = std::move(endpoint);
    } else if (name == "buffer_steps") {
      out.buffer_steps = integer(1, 10'000'000);
    } else if (name == "hwm") {
      out.hwm = integer(0, INT32_MAX);
    } else if (name == "max_queue_size") {
      out.max_queue_size = integer(1, 10'000'000);
    } else if (name == "topic") {
      out.topic = text();
    } else if (name == "event_layout") {
      out.event_layout = text({"array", "map"});
    } else {
      fail(field_key, "unknown key" + suggestion(name, field_names()), origin);
    }
  }
  return out;
}

OptionSpec kv_events_config_option() {
  OptionSpec spec;
  spec.key = std::string(kKey);
  spec.flag = "--kv-events-config";
  spec.env = "SLUICE_KV_EVENTS_CONFIG";
  spec.value_name = "JSON";
  spec.group = "Engine";
  spec.help =
      "KV-cache events over ZeroMQ in vLLM's format, as vLLM's --kv-events-config: {\"enable_kv_cache_events\", "
      "\"endpoint\", \"replay_endpoint\", \"topic\", \"buffer_steps\", \"hwm\", \"max_queue_size\", \"publisher\", "
      "\"event_layout\"} (default: off)";
  spec.set_from_text = [](Config& config, std::string_view text, std::string_view origin) {
    const json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) fail(kKey, "is not valid JSON: " + quote(text), origin);
    config.kv_events_config = parse_kv_events_config(value, kKey, origin);
  };
  spec.set_from_json = [](Config& config, const json& value, std::string_view origin) {
    config.kv_events_config = parse_kv_events_config(value, kKey, origin);
  };
  spec.show = [](const Config& config) { return show(config.kv_events_config); };
  return spec;
}

}  // namespace sluice::config::detail
