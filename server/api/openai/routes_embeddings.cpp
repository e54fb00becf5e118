#include "server/api/openai/routes_embeddings.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "proto/embeddings.h"
#include "proto/errors.h"
#include "proto/responses.h"
#include "server/api/stream_pump.h"
#include "server/api/submit_error.h"
#include "server/api/text_fit.h"
#include "server/http/client_identity.h"
#include "server/services/model_service.h"
#include "server/api/request_prep.h"
#include "server/http/api_error.h"

namespace sluice::server {
namespace {

// The named text model, or the only one when none is named; or the error (a speech
// model: 400 naming `model`).
OrError<ModelService*> pick_model(const ModelServices& services, const std::optional<std::string>& name) {
  if (!name) {
    if (ModelService* only = services.only()) return only;
    return proto::invalid_request("'model' is required when several models are served.", "model");
  }
  if (ModelService* model = services.find(*name)) return model;
  if (services.find_speech(*name))
    return proto::invalid_request("The model '" + *name + "' is a speech model: it has no embeddings.", "model");
  return services.all_loaded() ? proto::model_not_found(*name) : proto::not_ready("Models are still loading");
}

proto::ApiError context_error(int64_t max_model_len, size_t index, size_t num_tokens) {
  proto::ApiError error = proto::invalid_request(
      "This model's maximum context length is " + std::to_string(max_model_len) + " tokens. However, input " +
          std::to_string(index) + " has " + std::to_string(num_tokens) +
          " tokens. Please reduce the length of the input (or set truncate_prompt_tokens).",
      "input");
  error.code = "context_length_exceeded";
  return error;
}

// The inputs as token lists, truncated when asked; or the error.
std::variant<std::vector<std::vector<int32_t>>, proto::ApiError> input_tokens(proto::EmbeddingsRequest& request,
                                                                              const ModelService& model) {
  const int64_t max_len = model.max_model_len();
  std::vector<std::vector<int32_t>> inputs = std::move(request.token_inputs);
  for (const std::string& text : request.texts)
    inputs.push_back(model.tokenizer().encode(text, request.add_special_tokens, /*parse_special=*/true));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (request.truncate_prompt_tokens)
      proto::keep_last_tokens(inputs[i], *request.truncate_prompt_tokens < 0 ? max_len : *request.truncate_prompt_tokens);
    if (inputs[i].empty()) return proto::invalid_request("Input " + std::to_string(i) + " has no tokens.", "input");
    if (static_cast<int64_t>(inputs[i].size()) > max_len) return context_error(max_len, i, inputs[i].size());
  }
  return inputs;
}

// Every input's vector, or the error the response is. Waits on the strand.
asio::awaitable<std::variant<std::vector<std::vector<float>>, proto::ApiError>> collect(
    Exchange& ex, ModelService& model, std::vector<std::shared_ptr<engine::RequestStream>> streams) {
  std::vector<std::optional<engine::ChoiceFinish>> finishes(streams.size());
  size_t num_finished = 0;
  const StreamPump::Step take_finishes = [&]() -> asio::awaitable<bool> {
    for (size_t i = 0; i < streams.size(); ++i) {
      while (std::optional<engine::RequestEvent> event = streams[i]->try_pop()) {
        if (auto* finish = std::get_if<engine::ChoiceFinish>(&*event)) {
          finishes[i] = std::move(*finish);
          ++num_finished;
        }
      }
    }
    co_return num_finished == streams.size();
  };
  bool complete = false;
  const StreamPump::Abort abort = engine_abort(model);
  const StreamPump::Answer answer = [&](StreamPump& pump) -> asio::awaitable<void> {
    complete = co_await pump.run(take_finishes);
  };
  co_await pump_streams(ex, streams, abort, answer);
  if (!complete)
    co_return proto::ApiError{499, "The client closed the request.", "invalid_request_error", "", "client_closed"};
  std::vector<std::vector<float>> vectors;
  for (size_t i = 0; i < finishes.size(); ++i) {
    engine::ChoiceFinish& finish = *finishes[i];
    if (finish.reason == engine::FinishReason::timeout)
      co_return finish.queue_timeout ? proto::queue_timeout() : proto::request_timeout();
    if (finish.reason != engine::FinishReason::stop || finish.embedding.empty()) {
      spdlog::error("request {}: embedding of input {} ended with {}: {}", ex.request_id, i, finish.finish_reason(),
                    finish.error);
      co_return proto::internal_error(ex.request_id);
    }
    vectors.push_back(std::move(finish.embedding));
  }
  co_return vectors;
}

// What an embeddings request's prepare job makes: the request parsed, its model and
// its inputs tokenized.
struct EmbeddingsJob {
  proto::EmbeddingsRequest request;
  ModelService* model = nullptr;
  std::vector<std::vector<int32_t>> inputs;
};

OrError<EmbeddingsJob> prepare_embeddings(std::string_view body, const ModelServices& services,
                                          const config::Config& config) {
  auto parsed = proto::parse_embeddings_request(body, config.strict_request_fields);
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) return *error;
  EmbeddingsJob job{.request = std::get<proto::EmbeddingsRequest>(std::move(parsed))};
  proto::EmbeddingsRequest& request = job.request;
  auto picked = pick_model(services, request.model);
  if (auto* error = std::get_if<proto::ApiError>(&picked)) return *error;
  job.model = std::get<ModelService*>(picked);
  if (request.dimensions && *request.dimensions != job.model->embedding_width()) {
    return proto::invalid_request("The model does not support 'dimensions': its embeddings have " +
                                      std::to_string(job.model->embedding_width()) + " dimensions.",
                                  "dimensions");
  }
  // A text certain to overflow the context is refused before tokenizing (unless it is to be truncated).
  if (!request.truncate_prompt_tokens) {
    for (const std::string& text : request.texts) {
      if (auto error = text_too_long(job.model->max_model_len(), job.model->token_bound().min_tokens(text),
                                     text.size(), "input", /*reserve=*/0))
        return *error;
    }
  }
  auto tokenized = input_tokens(request, *job.model);
  if (auto* error = std::get_if<proto::ApiError>(&tokenized)) return *error;
  job.inputs = std::get<std::vector<std::vector<int32_t>>>(std::move(tokenized));
  return job;
}

asio::awaitable<void> handle_embeddings(Exchange& ex, const ModelServices& services, const config::Config& config,
                                        PrepPool& prep) {
  auto prepared = co_await run_prepare_job(prep, [&] { return prepare_embeddings(ex.request.body(), services, config); });
  if (auto* error = std::get_if<proto::ApiError>(&prepared)) co_return set_error(ex, *error);
  EmbeddingsJob& job = std::get<EmbeddingsJob>(prepared);
  const proto::EmbeddingsRequest& request = job.request;
  ModelService* model = job.model;
  std::vector<std::vector<int32_t>>& inputs = job.inputs;
  for (const std::string& field : request.ignored_fields)
    spdlog::debug("request {}: field '{}' accepted and ignored", ex.request_id, field);

  const std::string id = "embd-" + proto::new_completion_id().substr(5);
  const auto now = engine::Clock::now();
  auto after = [&](double seconds) {
    return now + std::chrono::duration_cast<engine::Clock::duration>(std::chrono::duration<double>(seconds));
  };
  const uint64_t client_id = client_identity(ex.request, config);
  int64_t num_tokens = 0;
  std::vector<engine::GenerationRequest> requests;
  requests.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    engine::GenerationRequest r;
    r.request_id = id + "-" + std::to_string(i);
    num_tokens += static_cast<int64_t>(inputs[i].size());
    r.prompt_tokens = std::move(inputs[i]);
    r.embed = model->pooling();
    r.prompt_param = "input";
    r.deadline = after(config.request_timeout_s);
    r.queue_deadline = after(config.queue_timeout_s);
    r.group_id = id;  // the inputs of one request share one turn in the queue
    r.client_id = client_id;
    requests.push_back(std::move(r));
  }
  std::vector<std::shared_ptr<engine::RequestStream>> streams;
  const engine::SubmitResult submitted = model->engine().submit_all(std::move(requests), streams);
  if (!submitted.ok()) co_return set_error(ex, submit_error(submitted));
  auto result = co_await collect(ex, *model, std::move(streams));
  if (auto* error = std::get_if<proto::ApiError>(&result)) {
    if (error->code == "timeout" || error->code == "queue_timeout") {
      co_return set_timeout_error(ex, error->code == "queue_timeout");
    }
    co_return set_error(ex, *error);
  }
  ex.response.result(http::status::ok);
  ex.response.set(http::field::content_type, "application/json");
  ex.response.body() = proto::embeddings_response(model->id(), std::get<std::vector<std::vector<float>>>(result),
                                                  request.base64, num_tokens);
}

}  // namespace

void add_embeddings_routes(Router& router, const ModelServices& services, const config::Config& config,
                           PrepPool& prep) {
  router.add(http::verb::post, "/v1/embeddings", [&services, &config, &prep](Exchange& ex) -> asio::awaitable<void> {
    return handle_embeddings(ex, services, config, prep);
  });
}

}  // namespace sluice::server
