#include "server/api/replica/routes_replica.h"

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "proto/errors.h"
#include "server/api/replica/replica_info.h"
#include "server/api/routes.h"
#include "server/services/model_service.h"
#include "server/http/api_error.h"

namespace sluice::server {
namespace {

// A GET route open to probes and routers; `answer` builds its JSON body.
template <class Answer>
void add_public_get(Router& router, std::string path, Answer answer) {
  router.add(
      http::verb::get, std::move(path),
      [answer](Exchange& ex) -> asio::awaitable<void> {
        answer(ex.response);
        co_return;
      },
      /*is_public=*/true);
}

// The model the info routes describe: the first text model (the first model when
// none is); null, after a 503, while none is loaded yet.
const ReplicaModel* lead_model(Response& response, const std::vector<ReplicaModel>& models) {
  for (const ReplicaModel& model : models)
    if (model.info.kind == "text") return &model;
  if (!models.empty()) return &models.front();
  set_api_error(response, proto::not_ready("Models are still loading"));
  return nullptr;
}

struct Flushed {
  std::string model;
  int32_t num_blocks = 0;
  std::string error;  // why this model's engine did not flush, or ""
};

// Runs on a prep thread: every engine was asked already; wait for their answers.
std::vector<Flushed> collect(std::vector<std::pair<std::string, std::future<int32_t>>>& asked) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kFlushWaitSeconds);
  std::vector<Flushed> out;
  for (auto& [model, flushed] : asked) {
    Flushed entry{model, 0, {}};
    if (flushed.wait_until(deadline) != std::future_status::ready) {
      entry.error = "its engine did not get to it within " + std::to_string(kFlushWaitSeconds) + " s";
    } else {
      try {
        entry.num_blocks = flushed.get();
      } catch (const std::future_error&) {
        entry.error = "its engine is not running";
      }
    }
    out.push_back(std::move(entry));
  }
  return out;
}

asio::awaitable<void> flush_cache(Exchange& ex, const ModelServices& services, PrepPool& prep) {
  std::vector<std::pair<std::string, std::future<int32_t>>> asked;
  for (ModelService* model : services.text_services())
    asked.emplace_back(model->id(), model->engine().flush_prefix_cache());
  auto flushed = co_await prep.run([&asked] { return collect(asked); });
  if (!flushed) co_return set_error(ex, prep_pool_full(prep));
  nlohmann::json body = {{"flushed_blocks", 0}, {"models", nlohmann::json::array()}};
  int64_t total = 0;
  std::string problems;
  for (const Flushed& entry : *flushed) {
    total += entry.num_blocks;
    nlohmann::json listed = {{"id", entry.model}, {"flushed_blocks", entry.num_blocks}};
    if (!entry.error.empty()) {
      listed["error"] = entry.error;
      problems += (problems.empty() ? "model " : "; model ") + entry.model + ": " + entry.error;
    }
    body["models"].push_back(std::move(listed));
  }
  body["flushed_blocks"] = total;
  if (!problems.empty()) {
    // The error beside what was flushed, so a client that reads only "error.message"
    // learns which engine could not.
    nlohmann::json error = nlohmann::json::parse(
        proto::error_body({503, "Cache not flushed: " + problems, "server_error", {}, "engine_unavailable"}));
    error.update(body);
    co_return set_json(ex.response, http::status::service_unavailable, error.dump());
  }
  set_json(ex.response, http::status::ok, body.dump());
}

}  // namespace

void add_replica_routes(Router& router, const ModelServices& services, PrepPool& prep) {
  auto get_load = [&services](Response& response) {
    set_json(response, http::status::ok, get_load_body(replica_load(services.replica_models())).dump());
  };
  auto load = [&services](Response& response) {
    set_json(response, http::status::ok, load_body(replica_load(services.replica_models())).dump());
  };
  auto server_info = [&services](Response& response) {
    const auto models = services.replica_models();
    if (lead_model(response, models)) set_json(response, http::status::ok, server_info_body(models).dump());
  };
  auto model_info = [&services](Response& response) {
    const auto models = services.replica_models();
    if (const ReplicaModel* lead = lead_model(response, models))
      set_json(response, http::status::ok, model_info_body(*lead).dump());
  };
  add_public_get(router, "/get_load", get_load);
  add_public_get(router, "/load", load);
  add_public_get(router, "/get_server_info", server_info);
  add_public_get(router, "/server_info", server_info);
  add_public_get(router, "/get_model_info", model_info);
  add_public_get(router, "/model_info", model_info);

  router.add(http::verb::post, "/flush_cache", [&services, &prep](Exchange& ex) -> asio::awaitable<void> {
    co_await flush_cache(ex, services, prep);
  });
}

}  // namespace sluice::server
