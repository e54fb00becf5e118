#pragma once
// The daemon's routes: health, readiness, models, metrics. Later issues add the
// OpenAI generation routes next to these.
#include "server/http_metrics.h"
#include "server/router.h"
#include "server/service_state.h"

namespace sluice::server {

void add_routes(Router& router, const ServiceState& state, const MetricsExposition& metrics);

// Sets a JSON body and status on `response`.
void set_json(Response& response, http::status status, std::string body);

}  // namespace sluice::server
