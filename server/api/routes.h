#pragma once
// The daemon's routes: health, readiness, models, metrics. The generation routes
// are in routes_generate.h.
#include "server/metrics/http_metrics.h"
#include "server/services/model_service.h"
#include "server/services/model_services.h"
#include "server/http/router.h"
#include "server/services/service_state.h"

namespace sluice::server {

// /metrics refreshes the engine metrics of `services` before rendering; /health
// asks their engines (a step past health_step_timeout_s is wedged).
void add_routes(Router& router, const ServiceState& state, const MetricsExposition& metrics,
                const ModelServices& services, double health_step_timeout_s);

// Sets a JSON body and status on `response`.
void set_json(Response& response, http::status status, std::string body);

}  // namespace sluice::server
