// /v1/completions and /v1/chat/completions: one prepare job on the prepare pool
// (parse, find the model, tokenize or render, compile the constraint), then map to
// engine requests (one per prompt, n choices each), submit, and write what the
// GenerationJob makes of the engine's events (one JSON body or an SSE stream) while
// watching the client.
#include "server/api/openai/routes_generate.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proto/chat.h"
#include "proto/completions.h"
#include "proto/errors.h"
#include "proto/responses.h"
#include "server/api/generation/chat_format.h"
#include "server/api/generation/chat_prepare.h"
#include "server/api/openai/completions_format.h"
#include "server/api/generation/generate_common.h"
#include "server/api/generation/generation_job.h"
#include "server/api/text_fit.h"
#include "server/http/api_error.h"

namespace sluice::server {
namespace {

// What a completions request's prepare job makes: the request, its model, its
// prompts tokenized and its output constraint compiled.
struct CompletionJob {
  proto::CompletionRequest request;
  ModelService* model = nullptr;
  std::vector<PreparedPrompt> prompts;
  OutputConstraint constraint;
};

OrError<CompletionJob> prepare_completion(std::string_view body, const ModelServices& services,
                                          const config::Config& config) {
  auto parsed = proto::parse_completion_request(body, parse_options(config));
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) return *error;
  CompletionJob job{.request = std::get<proto::CompletionRequest>(std::move(parsed))};
  proto::CompletionRequest& request = job.request;
  if (auto error = check_timeout(request, config)) return *error;
  auto model = text_model(services, request.model);
  if (auto* error = std::get_if<proto::ApiError>(&model)) return *error;
  job.model = std::get<ModelService*>(model);
  const tokenizer::Tokenizer& tok = job.model->tokenizer();
  const bool add_special = request.add_special_tokens.value_or(true);
  for (const proto::Prompt& prompt : request.prompts) {
    const auto* text = std::get_if<std::string>(&prompt);
    if (!text) continue;
    if (auto error = text_too_long(job.model->max_model_len(), job.model->token_bound().min_tokens(*text),
                                   text->size(), "prompt"))
      return *error;
  }
  job.prompts.reserve(request.prompts.size());
  for (const proto::Prompt& prompt : request.prompts) {
    PreparedPrompt prepared;
    if (const auto* text = std::get_if<std::string>(&prompt)) {
      prepared.tokens = tok.encode(*text, add_special, /*parse_special=*/true);
      if (request.echo) prepared.echo = *text;
    } else {
      prepared.tokens = std::get<std::vector<int32_t>>(prompt);
      if (request.echo) prepared.echo = tok.decode(prepared.tokens, /*skip_special=*/false);
    }
    job.prompts.push_back(std::move(prepared));
  }
  auto constraint = compile_output_constraint(*job.model, request);
  if (auto* error = std::get_if<proto::ApiError>(&constraint)) return *error;
  job.constraint = std::move(std::get<OutputConstraint>(constraint));
  return job;
}

asio::awaitable<void> handle_completions(Exchange& ex, const ModelServices& services,
                                         const config::Config& config, PrepPool& prep) {
  auto prepared = co_await run_prepare_job(prep, [&] { return prepare_completion(ex.request.body(), services, config); });
  if (auto* error = std::get_if<proto::ApiError>(&prepared)) co_return set_error(ex, *error);
  CompletionJob& prepared_job = std::get<CompletionJob>(prepared);
  proto::CompletionRequest& request = prepared_job.request;
  ModelService& model = *prepared_job.model;
  log_ignored(ex, request);
  const int32_t num_returned = request.sampling.n;
  const bool want_logprobs = request.sampling.logprobs.has_value();
  if (request.echo && request.sampling.logprobs) {
    request.sampling.prompt_logprobs = request.sampling.logprobs;  // score the echoed prompt too
  }
  bool score_only = false;
  if (request.sampling.max_tokens == 0) {  // echo only (checked by the parser): score the prompt
    score_only = true;
    request.sampling.max_tokens = 1;  // the engine generates at least one token; it is not shown
  }
  if (request.best_of > request.sampling.n) {
    request.sampling.n = request.best_of;
    if (!request.sampling.logprobs) request.sampling.logprobs = 0;  // the ranking needs each token's logprob
  }
  const tokenizer::Tokenizer& tok = model.tokenizer();
  std::vector<EchoedPrompt> echoes;
  for (PreparedPrompt& prompt : prepared_job.prompts) {
    echoes.push_back({std::move(prompt.echo), std::nullopt});
    if (request.sampling.prompt_logprobs)
      echoes.back().first_piece = tok.token_to_piece(prompt.tokens.empty() ? 0 : prompt.tokens.front());
  }
  JobSettings settings{.header = {proto::new_completion_id(), proto::unix_now(), request.model},
                       .want_logprobs = want_logprobs,
                       .include_usage = request.include_usage,
                       .continuous_usage = request.continuous_usage_stats,
                       .score_only = score_only};
  GenerationJob job(std::move(settings), std::make_unique<CompletionsFormat>(std::move(echoes), num_returned),
                    token_piece(model));
  const ResponseShape shape{.chat = false, .streaming = request.stream, .want_logprobs = want_logprobs,
                            .score_only = score_only, .num_returned = num_returned};
  co_await generate(ex, model, job, request, std::move(prepared_job.prompts), shape, config,
                    prepared_job.constraint);
}

// What a chat request's prepare job makes.
struct ChatJob {
  proto::ChatRequest request;
  ModelService* model = nullptr;
  PreparedChat chat;
};

OrError<ChatJob> prepare_chat_job(std::string_view body, const ModelServices& services,
                                  const config::Config& config) {
  auto parsed = proto::parse_chat_request(body, parse_options(config));
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) return *error;
  ChatJob job{.request = std::get<proto::ChatRequest>(std::move(parsed))};
  if (auto error = check_timeout(job.request, config)) return *error;
  auto model = text_model(services, job.request.model);
  if (auto* error = std::get_if<proto::ApiError>(&model)) return *error;
  job.model = std::get<ModelService*>(model);
  auto chat = prepare_chat(*job.model, job.request, config);
  if (auto* error = std::get_if<proto::ApiError>(&chat)) return *error;
  job.chat = std::move(std::get<PreparedChat>(chat));
  return job;
}

asio::awaitable<void> handle_chat(Exchange& ex, const ModelServices& services, const config::Config& config,
                                  PrepPool& prep) {
  auto prepared = co_await run_prepare_job(prep, [&] { return prepare_chat_job(ex.request.body(), services, config); });
  if (auto* error = std::get_if<proto::ApiError>(&prepared)) co_return set_error(ex, *error);
  ChatJob& chat = std::get<ChatJob>(prepared);
  proto::ChatRequest& request = chat.request;
  log_ignored(ex, request);
  std::vector<PreparedPrompt> prompts(1);
  prompts[0].tokens = std::move(chat.chat.tokens);
  const bool want_logprobs = request.sampling.logprobs.has_value();
  JobSettings settings{.header = {proto::new_chat_completion_id(), proto::unix_now(), request.model},
                       .want_logprobs = want_logprobs,
                       .include_usage = request.include_usage,
                       .continuous_usage = request.continuous_usage_stats};
  GenerationJob job(std::move(settings), std::make_unique<ChatFormat>(chat.chat.plan.output), token_piece(*chat.model));
  const ResponseShape shape{.chat = true, .streaming = request.stream, .want_logprobs = want_logprobs,
                            .num_returned = request.sampling.n};
  co_await generate(ex, *chat.model, job, request, std::move(prompts), shape, config, chat.chat.constraint);
}

}  // namespace

void add_generation_routes(Router& router, const ModelServices& services, const config::Config& config,
                           PrepPool& prep) {
  router.add(http::verb::post, "/v1/completions", [&services, &config, &prep](Exchange& ex) {
    return handle_completions(ex, services, config, prep);
  });
  router.add(http::verb::post, "/v1/chat/completions", [&services, &config, &prep](Exchange& ex) {
    return handle_chat(ex, services, config, prep);
  });
}

}  // namespace sluice::server