// /health's answer from the engines' health: 200 and the terse body while all run,
// 503 naming each model that is dead or wedged and why.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "server/api/health.h"

namespace sluice::server::unit_server_api_test_health {
namespace {

TEST_CASE("health: every engine running answers 200 with the terse body") {
  const HealthAnswer answer = health_answer({{"a", {}}, {"b", {}}}, 120);
  CHECK(answer.status == 200);
  CHECK(answer.body == R"({"status":"ok"})");
  CHECK(health_answer({}, 120).status == 200);  // still loading: the process answers
}

TEST_CASE("health: a wedged or dead engine answers 503 naming the model and why") {
  const HealthAnswer answer = health_answer(
      {{"ok-model", {}},
       {"slow", {false, "wedged", "a step has been running for 31.0 s"}},
       {"gone", {false, "dead", "the engine thread stopped: out of memory"}}},
      30);
  CHECK(answer.status == 503);
  const auto body = nlohmann::json::parse(answer.body);
  CHECK(body["status"] == "unhealthy");
  REQUIRE(body["models"].size() == 3);
  CHECK(body["models"][0] == nlohmann::json{{"id", "ok-model"}, {"status", "ok"}});
  CHECK(body["models"][1]["status"] == "wedged");
  CHECK(body["models"][1]["reason"] == "a step has been running for 31.0 s (health_step_timeout_s is 30.0)");
  CHECK(body["models"][2]["status"] == "dead");
  const std::string message = body["error"]["message"];
  CHECK(message.find("model slow: a step has been running") != std::string::npos);
  CHECK(message.find("model gone: the engine thread stopped: out of memory") != std::string::npos);
  CHECK(body["error"]["type"] == "server_error");
  CHECK(body["error"]["code"] == "engine_unhealthy");
  CHECK(body["error"]["param"].is_null());
}

}  // namespace
}  // namespace sluice::server
