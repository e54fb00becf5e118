#pragma once
// What /health answers: 200 while every model's engine runs, else 503 with a JSON
// body naming each model that cannot serve and why (its engine thread stopped, or
// a step has been running past health_step_timeout_s). Plain data in, status and
// body out, so the route stays a one-liner and the rules are unit-tested.
#include <string>
#include <vector>

#include "server/services/model_status.h"

namespace sluice::server {

struct HealthAnswer {
  unsigned status = 200;
  std::string body;  // JSON
};

// step_timeout_s: the configured limit, quoted in a wedged model's reason.
HealthAnswer health_answer(const std::vector<ModelHealth>& models, double step_timeout_s);

}  // namespace sluice::server
