#include "server/api/health.h"

#include <nlohmann/json.hpp>

#include "proto/errors.h"

namespace sluice::server {

HealthAnswer health_answer(const std::vector<ModelHealth>& models, double step_timeout_s) {
  nlohmann::json listed = nlohmann::json::array();
  std::string problems;  // "model a: why; model b: why"
  for (const ModelHealth& model : models) {
    nlohmann::json entry = {{"id", model.id}, {"status", model.health.status}};
    if (!model.health.ok) {
      std::string reason = model.health.reason;
      if (model.health.status == "wedged")
        reason += " (health_step_timeout_s is " + nlohmann::json(step_timeout_s).dump() + ")";
      entry["reason"] = reason;
      if (!problems.empty()) problems += "; ";
      problems += "model " + model.id + ": " + reason;
    }
    listed.push_back(std::move(entry));
  }
  // Healthy stays the terse body probes and load generators already match on.
  if (problems.empty()) return {200, R"({"status":"ok"})"};
  // The OpenAI-shaped error beside the per-model list, so a client that only
  // reads "error.message" learns which model failed.
  nlohmann::json body = nlohmann::json::parse(
      proto::error_body({503, "Unhealthy: " + problems, "server_error", {}, "engine_unhealthy"}));
  body["status"] = "unhealthy";
  body["models"] = std::move(listed);
  return {503, body.dump()};
}

}  // namespace sluice::server
