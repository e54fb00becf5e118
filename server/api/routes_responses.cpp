#include "server/api/routes_responses.h"

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/responses.h"
#include "proto/responses_api.h"
#include "proto/sse.h"
#include "server/api/chat_prepare.h"
#include "server/api/generate_common.h"
#include "server/api/responses_format.h"

namespace sluice::server {
namespace {

using OJson = nlohmann::ordered_json;

// A request parsed, its previous response's conversation found, and the chat
// request it maps to.
struct ParsedResponses {
  proto::ResponsesRequest request;
  OJson history = OJson::array();
  proto::ResponsesChat chat;
};

std::variant<ParsedResponses, proto::ApiError> parse(std::string_view body, const proto::ParseOptions& options,
                                                     ResponseStore& store) {
  proto::ResponsesParse parsed = proto::parse_responses_request(body, options);
  if (auto* error = std::get_if<proto::ApiError>(&parsed)) return *error;
  ParsedResponses out;
  out.request = std::get<proto::ResponsesRequest>(std::move(parsed));
  if (const auto& id = out.request.previous_response_id) {
    std::shared_ptr<const StoredResponse> previous = store.get(*id);
    if (!previous) return proto::previous_response_not_found(*id);
    out.history = OJson::parse(previous->conversation);
  }
  auto chat = proto::to_chat_request(out.request, out.history, options);
  if (auto* error = std::get_if<proto::ApiError>(&chat)) return *error;
  out.chat = std::get<proto::ResponsesChat>(std::move(chat));
  return out;
}

// Kept for previous_response_id: the conversation it continued, its input and its output.
void keep(ResponseStore& store, const ParsedResponses& parsed, const ResponsesFormat& format) {
  OJson conversation = parsed.history;
  for (const OJson& message : parsed.request.input_messages) conversation.push_back(message);
  for (const OJson& message : format.output_messages()) conversation.push_back(message);
  const OJson& response = format.final_response();
  store.put(response.at("id").get<std::string>(), {proto::dump_json(response), proto::dump_json(conversation)});
}

asio::awaitable<void> handle_create(Exchange& ex, const ModelServices& services, const config::Config& config,
                                    PrepPool& prep, ResponseStore& store) {
  auto parsed_or_busy = co_await prep.run([&] { return parse(ex.request.body(), parse_options(config), store); });
  if (!parsed_or_busy) {
    set_error(ex.response, prep_pool_full(prep));
    co_return;
  }
  if (auto* error = std::get_if<proto::ApiError>(&*parsed_or_busy)) {
    set_error(ex.response, *error);
    co_return;
  }
  ParsedResponses& parsed = std::get<ParsedResponses>(*parsed_or_busy);
  proto::ChatRequest& request = parsed.chat.request;
  log_ignored(ex, request);
  ModelService* model = find_model(ex, services, request.model);
  if (!model) co_return;
  if (!model->has_chat_template()) {
    set_error(ex.response, proto::invalid_request("The model '" + request.model +
                                                      "' has no chat template; use /v1/completions.",
                                                  "model"));
    co_return;
  }
  auto prepared = co_await prepare_chat(ex, *model, request, parsed.chat.body, config, prep,
                                         /*compile_tools=*/true, proto::in_responses_terms);
  if (!prepared) co_return;
  std::vector<PreparedPrompt> prompts(1);
  prompts[0].tokens = std::move(prepared->tokens);
  JobSettings settings{.header = {new_response_id(), proto::unix_now(), request.model}};
  auto format = std::make_unique<ResponsesFormat>(prepared->plan.output, parsed.request.echo, request.stream);
  const ResponsesFormat& responses = *format;
  GenerationJob job(std::move(settings), std::move(format), token_piece(*model));
  const ResponseShape shape{.chat = true, .streaming = request.stream, .want_logprobs = false, .num_returned = 1};
  co_await generate(ex, *model, job, request, std::move(prompts), shape, config, prep, &prepared->tools);
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
      set_error(ex.response, proto::response_not_found(id));
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
      set_error(ex.response, proto::response_not_found(id));
    }
    co_return;
  });
}

}  // namespace sluice::server
