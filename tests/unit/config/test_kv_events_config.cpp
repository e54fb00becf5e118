// kv_events_config: vLLM's --kv-events-config object, off by default.
#include <doctest/doctest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "config/config_loader.h"

namespace unit_config_test_kv_events_config {

namespace {

using sluice::config::Config;
using sluice::config::ConfigError;
using sluice::config::ConfigOptions;
using sluice::config::Environment;

Config load(std::vector<std::string> args, const Environment& env = {}) {
  CLI::App app{"sluice"};
  CLI::App* serve = app.add_subcommand("serve");
  ConfigOptions options(*serve);
  args.insert(args.begin(), {"serve", "--model", "m.gguf"});
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector back to front
  app.parse(args);
  return options.resolve(env);
}

std::string error_of(std::vector<std::string> args) {
  try {
    load(std::move(args));
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("expected a ConfigError");
  return "";
}

TEST_CASE("config: kv_events_config") {
  SUBCASE("off by default, with vLLM's defaults") {
    const Config c = load({});
    CHECK_FALSE(c.kv_events_config.enabled());
    CHECK(c.kv_events_config.endpoint == "tcp://*:5557");
    CHECK(c.kv_events_config.replay_endpoint.empty());
    CHECK(c.kv_events_config.buffer_steps == 10000);
    CHECK(c.kv_events_config.event_layout == "array");
  }
  SUBCASE("a vLLM --kv-events-config object is taken as it is") {
    const Config c = load({"--kv-events-config",
                           R"({"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://indexer:5557",
                               "replay_endpoint": null, "buffer_steps": 500, "hwm": 1000, "max_queue_size": 64,
                               "topic": "kv@pod@m"})"});
    CHECK(c.kv_events_config.enabled());
    CHECK(c.kv_events_config.endpoint == "tcp://indexer:5557");
    CHECK(c.kv_events_config.replay_endpoint.empty());
    CHECK(c.kv_events_config.buffer_steps == 500);
    CHECK(c.kv_events_config.hwm == 1000);
    CHECK(c.kv_events_config.max_queue_size == 64);
    CHECK(c.kv_events_config.topic == "kv@pod@m");
  }
  SUBCASE("publisher null turns it off; the environment works too") {
    CHECK_FALSE(load({"--kv-events-config", R"({"enable_kv_cache_events": true, "publisher": "null"})"})
                    .kv_events_config.enabled());
    const Config c = load({}, {{"SLUICE_KV_EVENTS_CONFIG", R"({"enable_kv_cache_events": true})"}});
    CHECK(c.kv_events_config.enabled());
  }
  SUBCASE("mistakes name the field") {
    CHECK(error_of({"--kv-events-config", R"({"enable_kv_cache_event": true})"}).find(
              "kv_events_config.enable_kv_cache_event: unknown key; did you mean \"enable_kv_cache_events\"?") !=
          std::string::npos);
    CHECK(error_of({"--kv-events-config", R"({"endpoint": "localhost:5557"})"}).find(
              "kv_events_config.endpoint: must be a ZeroMQ endpoint") != std::string::npos);
    CHECK(error_of({"--kv-events-config", R"({"event_layout": "tuple"})"}).find(
              "kv_events_config.event_layout: must be one of array, map") != std::string::npos);
    CHECK(error_of({"--kv-events-config", R"({"buffer_steps": 0})"}).find(
              "kv_events_config.buffer_steps: must be an integer in [1, 10000000]") != std::string::npos);
    CHECK(error_of({"--kv-events-config", "{"}).find("kv_events_config: is not valid JSON") != std::string::npos);
  }
}

}  // namespace
}  // namespace unit_config_test_kv_events_config
