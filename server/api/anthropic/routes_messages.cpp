#include "server/api/anthropic/routes_messages.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/anthropic_messages.h"
#include "proto/responses.h"
#include "server/api/generation/chat_prepare.h"
#include "server/api/generation/generate_common.h"
#include "server/api/anthropic/messages_format.h"
#include "server/http/api_error.h"

namespace sluice::server {
namespace {

// What a Messages request's prepare job makes: the chat request it translates to,
// its model, and the prompt (with the output constraint unless only counting).
struct MessagesJob {
  proto::MessagesRequest request;
  ModelService* model = nullptr;
  PreparedChat chat;
};

OrError<MessagesJob> prepare_messages(std::string_view body, const ModelServices& services,
                                      const config::Config& config, bool count_tokens) {
  auto parsed = proto::parse_messages_request(body, parse_options(config), count_tokens);
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) return *error;
  MessagesJob job{.request = std::get<proto::MessagesRequest>(std::move(parsed))};
  if (auto error = check_timeout(job.request, config)) return *error;
  auto model = text_model(services, job.request.model);
  if (auto* error = std::get_if<proto::ApiError>(&model)) return *error;
  job.model = std::get<ModelService*>(model);
  auto chat = prepare_chat(*job.model, job.request, config, /*compile_constraint=*/!count_tokens);
  if (auto* error = std::get_if<proto::ApiError>(&chat)) return proto::in_messages_terms(*error);
  job.chat = std::move(std::get<PreparedChat>(chat));
  return job;
}

asio::awaitable<void> handle_messages(Exchange& ex, const ModelServices& services, const config::Config& config,
                                      PrepPool& prep, bool count_tokens) {
  auto prepared = co_await run_prepare_job(
      prep, [&] { return prepare_messages(ex.request.body(), services, config, count_tokens); });
  if (auto* error = std::get_if<proto::ApiError>(&prepared)) co_return set_error(ex, *error);
  MessagesJob& messages = std::get<MessagesJob>(prepared);
  proto::MessagesRequest& request = messages.request;
  log_ignored(ex, request);
  if (count_tokens) {
    ex.response.result(http::status::ok);
    ex.response.set(http::field::content_type, "application/json");
    ex.response.body() = nlohmann::json{{"input_tokens", messages.chat.tokens.size()}}.dump();
    co_return;
  }
  std::vector<PreparedPrompt> prompts(1);
  prompts[0].tokens = std::move(messages.chat.tokens);
  JobSettings settings{.header = {new_message_id(), proto::unix_now(), request.model}};
  GenerationJob job(std::move(settings), std::make_unique<MessagesFormat>(messages.chat.plan.output),
                    token_piece(*messages.model));
  const ResponseShape shape{.chat = true, .streaming = request.stream, .num_returned = 1};
  co_await generate(ex, *messages.model, job, request, std::move(prompts), shape, config, messages.chat.constraint);
}

}  // namespace

// Their errors, refusals before the handler included, are written in Anthropic's shape.
void add_messages_routes(Router& router, const ModelServices& services, const config::Config& config,
                         PrepPool& prep) {
  router.add(
      http::verb::post, "/v1/messages",
      [&services, &config, &prep](Exchange& ex) {
        return handle_messages(ex, services, config, prep, /*count_tokens=*/false);
      },
      /*is_public=*/false, ErrorDialect::anthropic);
  router.add(
      http::verb::post, "/v1/messages/count_tokens",
      [&services, &config, &prep](Exchange& ex) {
        return handle_messages(ex, services, config, prep, /*count_tokens=*/true);
      },
      /*is_public=*/false, ErrorDialect::anthropic);
}

}  // namespace sluice::server
