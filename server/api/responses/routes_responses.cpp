#include "server/api/responses/routes_responses.h"

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/responses.h"
#include "proto/responses_api.h"
#include "proto/sse.h"
#include "server/api/generation/chat_prepare.h"
#include "server/api/generation/generate_common.h"
#include "server/api/responses/responses_format.h"
#include "server/http/api_error.h"

namespace sluice::server {
namespace {

using OJson = nlohmann::ordered_json;

// What a Responses request's prepare job makes: the request parsed, its previous
// response's conversation found, the chat request it maps to, its model and prompt.
struct ResponsesJob {
  proto::ResponsesRequest request;
  OJson history = OJson::array();
  proto::ChatRequest chat;
  ModelService* model = nullptr;
  PreparedChat prepared;
};

OrError<ResponsesJob> prepare_responses(std::string_view body, const ModelServices& services,
                                        const config::Config& config, ResponseStore& store) {
  const proto::ParseOptions options = parse_options(config);
  proto::ResponsesParse parsed = proto::parse_responses_request(body, options);
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) return *error;
  ResponsesJob job{.request = std::get<proto::ResponsesRequest>(std::move(parsed))};
  if (const auto& id = job.request.previous_response_id) {
    std::shared_ptr<const StoredResponse> previous = store.get(*id);
    if (!previous) return proto::previous_response_not_found(*id);
    std::string error;
    if (!proto::parse_json_document(previous->conversation, job.history, error)) {
      throw std::runtime_error("stored conversation of " + *id + " does not parse: " + error);
    }
  }
  auto chat = proto::to_chat_request(job.request, job.history, options);
  if (auto* error = std::get_if<proto::ApiError>(&chat)) return *error;
  job.chat = std::get<proto::ChatRequest>(std::move(chat));
  if (auto error = check_timeout(job.chat, config)) return *error;
  auto model = text_model(services, job.chat.model);
  if (auto* error = std::get_if<proto::ApiError>(&model)) return *error;
  job.model = std::get<ModelService*>(model);
  auto prepared = prepare_chat(*job.model, job.chat, config);
  if (auto* error = std::get_if<proto::ApiError>(&prepared)) return proto::in_responses_terms(*error);
  job.prepared = std::move(std::get<PreparedChat>(prepared));
  return job;
}

// Kept for previous_response_id: the conversation it continued, its input and its output.
void keep(ResponseStore& store, const ResponsesJob& parsed, const ResponsesFormat& format) {
  OJson conversation = parsed.history;
  for (const OJson& message : parsed.request.input_messages) conversation.push_back(message);
  for (const OJson& message : format.output_messages()) conversation.push_back(message);
  const OJson& response = format.final_response();
  store.put(response.at("id").get<std::string>(), {proto::dump_json(response), proto::dump_json(conversation)});
}

asio::awaitable<void> handle_create(Exchange& ex, const ModelServices& services, const config::Config& config,
                                    PrepPool& prep, ResponseStore& store) {
  auto prepared = co_await run_prepare_job(
      prep, [&] { return prepare_responses(ex.request.body(), services, config, store); });
  if (auto* error = std::get_if<proto::ApiError>(&prepared)) co_return set_error(ex, *error);
  ResponsesJob& parsed = std::get<ResponsesJob>(prepared);
  proto::ChatRequest& request = parsed.chat;
  log_ignored(ex, request);
  std::vector<PreparedPrompt> prompts(1);
  prompts[0].tokens = std::move(parsed.prepared.tokens);
  JobSettings settings{.header = {new_response_id(), proto::unix_now(), request.model}};
  auto format = std::make_unique<ResponsesFormat>(parsed.prepared.plan.output, parsed.request.echo, request.stream);
  const ResponsesFormat& responses = *format;
  GenerationJob job(std::move(settings), std::move(format), token_piece(*parsed.model));
  const ResponseShape shape{.chat = true, .streaming = request.stream, .want_logprobs = false, .num_returned = 1};
  co_await generate(ex, *parsed.model, job, request, std::move(prompts), shape, config, parsed.prepared.constraint);
  if (parsed.request.store && responses.is_finished()) keep(store, parsed, responses);
}

}  // namespace

ResponseStoreLimits response_store_limits(const config::Config& config) {
  return {.max_count = static_cast<size_t>(config.responses_store_max_count),
          .max_bytes = static_cast<size_t>(config.responses_store_max_bytes),
          .ttl_s = config.responses_store_ttl_s};
}

void add_responses_routes(Router& router, const ModelServices& services, const config::Config& config,
                          PrepPool& prep, ResponseStore& store) {
  router.add(http::verb::post, "/v1/responses", [&services, &config, &prep, &store](Exchange& ex) {
    return handle_create(ex, services, config, prep, store);
  });
  router.add(http::verb::get, "/v1/responses/{id}", [&store](Exchange& ex) -> asio::awaitable<void> {
    const std::string id(ex.param("id"));
    if (auto stored = store.get(id)) {
      ex.response.result(http::status::ok);
      ex.response.set(http::field::content_type, "application/json");
      ex.response.body() = stored->body;
    } else {
      set_error(ex, proto::response_not_found(id));
    }
    co_return;
  });
  router.add(http::verb::delete_, "/v1/responses/{id}", [&store](Exchange& ex) -> asio::awaitable<void> {
    const std::string id(ex.param("id"));
    if (store.erase(id)) {
      ex.response.result(http::status::ok);
      ex.response.set(http::field::content_type, "application/json");
      ex.response.body() = OJson{{"id", id}, {"object", "response"}, {"deleted", true}}.dump();
    } else {
      set_error(ex, proto::response_not_found(id));
    }
    co_return;
  });
}

}  // namespace sluice::server
