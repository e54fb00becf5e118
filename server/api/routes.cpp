#include "server/api/routes.h"

#include <nlohmann/json.hpp>

#include "proto/errors.h"
#include "proto/models.h"
#include "server/api/health.h"
#include "server/http/api_error.h"

namespace sluice::server {

void set_json(Response& response, http::status status, std::string body) {
  response.result(status);
  response.set(http::field::content_type, "application/json");
  response.body() = std::move(body);
}

void add_routes(Router& router, const ServiceState& state, const MetricsExposition& metrics,
                const ModelServices& services, double health_step_timeout_s) {
  // Liveness: the process answers and every loaded model's engine runs (a dead or
  // wedged engine is a reason to restart the process). Open without an API key,
  // like /metrics and /ready, because probes and scrapers carry none.
  router.add(
      http::verb::get, "/health",
      [&services, health_step_timeout_s](Exchange& ex) -> asio::awaitable<void> {
        HealthAnswer answer = health_answer(services.health(health_step_timeout_s), health_step_timeout_s);
        set_json(ex.response, static_cast<http::status>(answer.status), std::move(answer.body));
        co_return;
      },
      /*is_public=*/true);

  router.add(
      http::verb::get, "/ready",
      [&state, &services](Exchange& ex) -> asio::awaitable<void> {
        if (state.draining.load()) {
          set_error(ex, proto::not_ready("Shutting down"));
        } else if (!state.ready.load()) {
          set_error(ex, proto::not_ready("Models are still loading"));
        } else {
          nlohmann::json body = {{"status", "ready"}, {"models", nlohmann::json::array()}};
          for (const auto& model : services.list()) body["models"].push_back(model.id);
          set_json(ex.response, http::status::ok, body.dump());
        }
        co_return;
      },
      /*is_public=*/true);

  router.add(http::verb::get, "/v1/models", [&services](Exchange& ex) -> asio::awaitable<void> {
    set_json(ex.response, http::status::ok, proto::model_list(services.list()).dump());
    co_return;
  });

  router.add(http::verb::get, "/v1/models/{id}", [&services](Exchange& ex) -> asio::awaitable<void> {
    std::string id(ex.param("id"));
    if (auto model = services.info(id)) {
      set_json(ex.response, http::status::ok, proto::model_object(*model).dump());
    } else {
      set_error(ex, proto::model_not_found(id));
    }
    co_return;
  });

  router.add(
      http::verb::get, "/metrics",
      [&metrics, &services](Exchange& ex) -> asio::awaitable<void> {
        services.refresh_metrics();
        ex.response.result(http::status::ok);
        ex.response.set(http::field::content_type, MetricsExposition::content_type);
        ex.response.body() = metrics.render();
        co_return;
      },
      /*is_public=*/true);
}

}  // namespace sluice::server
