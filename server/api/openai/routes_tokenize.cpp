// vLLM's /tokenize and /detokenize: the model's own tokenizer (and chat template for
// "messages") on demand, no engine involved; the work runs on the PrepPool.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/chat/jinja/template_error.h"
#include "proto/chat_render.h"
#include "proto/errors.h"
#include "proto/sse.h"
#include "proto/tokenize.h"
#include "server/api/openai/routes_generate.h"
#include "server/api/text_fit.h"
#include "server/api/request_prep.h"
#include "server/http/api_error.h"

namespace sluice::server {
namespace {

proto::ParseOptions parse_options_of(const config::Config& config) {
  return {.strict_fields = config.strict_request_fields};
}

// Unknown keys (when not strict), by their path, at debug as on the other routes.
void log_ignored_fields(const Exchange& ex, const std::vector<std::string>& ignored_fields) {
  for (const std::string& field : ignored_fields)
    spdlog::debug("request {}: field '{}' accepted and ignored", ex.request_id, field);
}

void set_body(Response& response, const nlohmann::ordered_json& body) {
  response.result(http::status::ok);
  response.set(http::field::content_type, "application/json");
  response.body() = proto::dump_json(body);
}

// The named model, or the only one when none is named; or the error.
OrError<ModelService*> pick_model(const ModelServices& services, const std::optional<std::string>& name) {
  if (name) {
    if (ModelService* model = services.find(*name)) return model;
    return proto::model_not_found(*name);
  }
  if (ModelService* model = services.only()) return model;
  return proto::invalid_request("'model' is required when several models are served.", "model");
}

// What a tokenize request's prepare job makes.
struct TokenizeJob {
  proto::TokenizeRequest request;
  ModelService* model = nullptr;
  std::vector<int32_t> tokens;
};

// Bounded like the generation routes: a text that cannot fit the context is
// refused before tokenizing.
OrError<TokenizeJob> prepare_tokenize(std::string_view body, const ModelServices& services,
                                      const config::Config& config) {
  auto parsed = proto::parse_tokenize_request(body, parse_options_of(config));
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) return *error;
  TokenizeJob job{.request = std::get<proto::TokenizeRequest>(std::move(parsed))};
  const proto::TokenizeRequest& request = job.request;
  auto picked = pick_model(services, request.model);
  if (auto* error = std::get_if<proto::ApiError>(&picked)) return *error;
  job.model = std::get<ModelService*>(picked);
  ModelService& model = *job.model;
  if (request.is_chat() && !model.has_chat_template())
    return proto::invalid_request("The model has no chat template.", "messages");
  const std::string param = request.is_chat() ? "messages" : "prompt";
  size_t num_bytes = 0;
  int64_t min_tokens = 0;
  if (request.is_chat()) {
    for (const proto::ChatMessage& message : request.messages) num_bytes += message.content.size();
    min_tokens = model.token_bound().min_tokens_of_bytes(num_bytes);
  } else {
    num_bytes = request.prompt->size();
    min_tokens = model.token_bound().min_tokens(*request.prompt);
  }
  if (auto error = text_too_long(model.max_model_len(), min_tokens, num_bytes, param, /*reserve=*/0)) return *error;
  std::optional<std::string> text = request.prompt;
  if (request.is_chat()) {
    try {
      text = model.render_chat(request.messages, request.add_generation_prompt, request.chat_template_kwargs);
    } catch (const chat::TemplateError& e) {
      return proto::invalid_request(std::string("The chat template rejected the messages: ") + e.what(), "messages");
    }
    if (request.continue_final_message) text = proto::continued_prompt(std::move(*text), request.messages.back().content);
  }
  if (!text) return proto::final_message_not_continuable();
  job.tokens = model.tokenizer().encode(*text, request.add_special_tokens, /*parse_special=*/true);
  return job;
}

asio::awaitable<void> tokenize(Exchange& ex, const ModelServices& services, const config::Config& config,
                               PrepPool& prep) {
  auto prepared = co_await run_prepare_job(prep, [&] { return prepare_tokenize(ex.request.body(), services, config); });
  if (auto* error = std::get_if<proto::ApiError>(&prepared)) co_return set_error(ex, *error);
  const TokenizeJob& job = std::get<TokenizeJob>(prepared);
  log_ignored_fields(ex, job.request.ignored_fields);
  std::vector<std::string> strs;
  if (job.request.return_token_strs) {
    for (int32_t id : job.tokens) strs.push_back(job.model->tokenizer().token_text(id));
  }
  set_body(ex.response, proto::tokenize_response(job.tokens, static_cast<int32_t>(job.model->max_model_len()),
                                                 job.request.return_token_strs ? &strs : nullptr));
}

void detokenize(Exchange& ex, const ModelServices& services, const config::Config& config) {
  auto parsed = proto::parse_detokenize_request(ex.request.body(), parse_options_of(config));
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) return set_error(ex, *error);
  auto& request = std::get<proto::DetokenizeRequest>(parsed);
  log_ignored_fields(ex, request.ignored_fields);
  auto picked = pick_model(services, request.model);
  if (auto* error = std::get_if<proto::ApiError>(&picked)) return set_error(ex, *error);
  const tokenizer::Tokenizer& tok = std::get<ModelService*>(picked)->tokenizer();
  for (size_t i = 0; i < request.tokens.size(); ++i) {
    const int32_t id = request.tokens[i];
    if (id < 0 || id >= tok.vocab_size()) {
      return set_error(ex, proto::invalid_request("Token id " + std::to_string(id) +
                                                               " is outside the vocabulary.",
                                                           "tokens"));
    }
  }
  set_body(ex.response, proto::detokenize_response(tok.decode(request.tokens, /*skip_special=*/false)));
}

}  // namespace

void add_tokenize_routes(Router& router, const ModelServices& services, const config::Config& config,
                         PrepPool& prep) {
  router.add(http::verb::post, "/tokenize", [&services, &config, &prep](Exchange& ex) -> asio::awaitable<void> {
    return tokenize(ex, services, config, prep);
  });
  router.add(http::verb::post, "/detokenize", [&services, &config](Exchange& ex) -> asio::awaitable<void> {
    detokenize(ex, services, config);
    co_return;
  });
}

}  // namespace sluice::server
