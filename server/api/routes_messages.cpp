#include "server/api/routes_messages.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/anthropic_messages.h"
#include "proto/responses.h"
#include "server/api/chat_prepare.h"
#include "server/api/generate_common.h"
#include "server/api/messages_format.h"

namespace sluice::server {
namespace {

asio::awaitable<std::optional<proto::MessagesRequest>> parse_messages(Exchange& ex, const config::Config& config,
                                                                      PrepPool& prep, bool count_tokens) {
  co_return co_await parse_body<proto::MessagesRequest>(
      ex, config, prep, [count_tokens](std::string_view body, const proto::ParseOptions& options) {
        return proto::parse_messages_request(body, options, count_tokens);
      });
}

asio::awaitable<void> answer_message(Exchange& ex, const ModelServices& services, const config::Config& config,
                                     PrepPool& prep) {
  auto parsed = co_await parse_messages(ex, config, prep, /*count_tokens=*/false);
  if (!parsed) co_return;
  proto::MessagesRequest& request = *parsed;
  ModelService* model = find_model(ex, services, request.model);
  if (!model) co_return;
  auto prepared = co_await prepare_chat(ex, *model, request, request.chat_body, config, prep,
                                        /*compile_tools=*/true, proto::in_messages_terms);
  if (!prepared) co_return;
  std::vector<PreparedPrompt> prompts(1);
  prompts[0].tokens = std::move(prepared->tokens);
  JobSettings settings{.header = {new_message_id(), proto::unix_now(), request.model}};
  GenerationJob job(std::move(settings), std::make_unique<MessagesFormat>(prepared->plan.output),
                    token_piece(*model));
  const ResponseShape shape{.chat = true, .streaming = request.stream, .num_returned = 1};
  co_await generate(ex, *model, job, request, std::move(prompts), shape, config, prep, &prepared->tools);
}

asio::awaitable<void> answer_count(Exchange& ex, const ModelServices& services, const config::Config& config,
                                   PrepPool& prep) {
  auto parsed = co_await parse_messages(ex, config, prep, /*count_tokens=*/true);
  if (!parsed) co_return;
  proto::MessagesRequest& request = *parsed;
  ModelService* model = find_model(ex, services, request.model);
  if (!model) co_return;
  auto prepared = co_await prepare_chat(ex, *model, request, request.chat_body, config, prep,
                                        /*compile_tools=*/false, proto::in_messages_terms);
  if (!prepared) co_return;
  ex.response.result(http::status::ok);
  ex.response.set(http::field::content_type, "application/json");
  ex.response.body() = nlohmann::json{{"input_tokens", prepared->tokens.size()}}.dump();
}

// The shared code writes OpenAI error bodies; this API's clients read Anthropic's.
void in_anthropic_shape(Exchange& ex) {
  if (ex.response_sent || ex.response.result_int() < 400) return;
  const std::string body = proto::anthropic_error_from_openai(static_cast<int>(ex.response.result_int()),
                                                              ex.response.body());
  ex.response.set(http::field::content_type, "application/json");
  ex.response.body() = body;
}

asio::awaitable<void> handle_messages(Exchange& ex, const ModelServices& services, const config::Config& config,
                                      PrepPool& prep, bool count_tokens) {
  if (count_tokens) {
    co_await answer_count(ex, services, config, prep);
  } else {
    co_await answer_message(ex, services, config, prep);
  }
  in_anthropic_shape(ex);
}

}  // namespace

void add_messages_routes(Router& router, const ModelServices& services, const config::Config& config,
                         PrepPool& prep) {
  router.add(http::verb::post, "/v1/messages", [&services, &config, &prep](Exchange& ex) {
    return handle_messages(ex, services, config, prep, /*count_tokens=*/false);
  });
  router.add(http::verb::post, "/v1/messages/count_tokens", [&services, &config, &prep](Exchange& ex) {
    return handle_messages(ex, services, config, prep, /*count_tokens=*/true);
  });
}

}  // namespace sluice::server
