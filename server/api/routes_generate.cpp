// /v1/completions and /v1/chat/completions: parse (proto/), map to engine requests
// (one per prompt, n choices each), submit, then write what the GenerationJob makes
// of the engine's events (one JSON body or an SSE stream) while watching the client.
#include "server/api/routes_generate.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proto/chat.h"
#include "proto/completions.h"
#include "proto/errors.h"
#include "proto/responses.h"
#include "server/api/chat_format.h"
#include "server/api/completions_format.h"
#include "server/api/generate_common.h"
#include "server/api/generation_job.h"
#include "server/api/text_fit.h"

namespace sluice::server {
namespace {

asio::awaitable<void> handle_completions(Exchange& ex, const ModelServices& services,
                                         const config::Config& config, PrepPool& prep) {
  auto parsed = co_await parse_body<proto::CompletionRequest>(
      ex, config, prep, [](std::string_view body, const proto::ParseOptions& options) {
        return proto::parse_completion_request(body, options);
      });
  if (!parsed) co_return;
  proto::CompletionRequest& request = *parsed;
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
  ModelService* model = find_model(ex, services, request.model);
  if (!model) co_return;
  const tokenizer::Tokenizer& tok = model->tokenizer();
  const bool add_special = request.add_special_tokens.value_or(true);
  for (const proto::Prompt& prompt : request.prompts) {
    const auto* text = std::get_if<std::string>(&prompt);
    if (!text) continue;
    if (auto error = text_too_long(model->max_model_len(), model->token_bound().min_tokens(*text), text->size(), "prompt")) {
      set_error(ex.response, *error);
      co_return;
    }
  }
  auto tokenized = co_await prep.run([&] {
    std::vector<PreparedPrompt> prompts;
    prompts.reserve(request.prompts.size());
    for (const proto::Prompt& prompt : request.prompts) {
      PreparedPrompt prepared;
      if (const auto* text = std::get_if<std::string>(&prompt)) {
        prepared.tokens = tok.encode(*text, add_special, /*parse_special=*/true);
        if (request.echo) prepared.echo = *text;
      } else {
        prepared.tokens = std::get<std::vector<int32_t>>(prompt);
        if (request.echo) prepared.echo = tok.decode(prepared.tokens, /*skip_special=*/false);
      }
      prompts.push_back(std::move(prepared));
    }
    return prompts;
  });
  if (!tokenized) {
    set_error(ex.response, prep_pool_full(prep));
    co_return;
  }
  std::vector<PreparedPrompt> prompts = std::move(*tokenized);
  std::vector<EchoedPrompt> echoes;
  for (PreparedPrompt& prompt : prompts) {
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
                    token_piece(*model));
  const ResponseShape shape{.chat = false, .streaming = request.stream, .want_logprobs = want_logprobs,
                            .score_only = score_only, .num_returned = num_returned};
  co_await generate(ex, *model, job, request, std::move(prompts), shape, config, prep);
}

asio::awaitable<void> handle_chat(Exchange& ex, const ModelServices& services, const config::Config& config,
                                  PrepPool& prep) {
  auto parsed = co_await parse_body<proto::ChatRequest>(
      ex, config, prep, [](std::string_view body, const proto::ParseOptions& options) {
        return proto::parse_chat_request(body, options);
      });
  if (!parsed) co_return;
  proto::ChatRequest& request = *parsed;
  ModelService* model = find_model(ex, services, request.model);
  if (!model) co_return;
  if (!model->has_chat_template()) {
    set_error(ex.response, proto::invalid_request("The model '" + request.model +
                                                      "' has no chat template; use /v1/completions.",
                                                  "model"));
    co_return;
  }
  auto prepared = co_await prepare_chat(ex, *model, request, ex.request.body(), config, prep);
  if (!prepared) co_return;
  std::vector<PreparedPrompt> prompts(1);
  prompts[0].tokens = std::move(prepared->tokens);
  const bool want_logprobs = request.sampling.logprobs.has_value();
  JobSettings settings{.header = {proto::new_chat_completion_id(), proto::unix_now(), request.model},
                       .want_logprobs = want_logprobs,
                       .include_usage = request.include_usage,
                       .continuous_usage = request.continuous_usage_stats};
  GenerationJob job(std::move(settings), std::make_unique<ChatFormat>(prepared->plan.output), token_piece(*model));
  const ResponseShape shape{.chat = true, .streaming = request.stream, .want_logprobs = want_logprobs,
                            .num_returned = request.sampling.n};
  co_await generate(ex, *model, job, request, std::move(prompts), shape, config, prep, &prepared->tools);
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
