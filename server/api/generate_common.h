#pragma once
// What every generation route shares, whichever wire API it speaks
// (/v1/completions, /v1/chat/completions, /v1/responses): the body parsed on the
// tokenizer pool, the model looked up, a chat prompt rendered with its tools and
// their grammar compiled, then the engine requests submitted and the GenerationJob's
// output written (one JSON body or an SSE stream) while the client is watched.
// Every function that can refuse sets the response's error itself.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"
#include "engine/request.h"
#include "proto/chat.h"
#include "proto/errors.h"
#include "proto/generation_options.h"
#include "server/api/chat_tools.h"
#include "server/api/generation_job.h"
#include "server/api/response_budget.h"
#include "server/http/router.h"
#include "server/services/model_service.h"
#include "server/services/model_services.h"
#include "server/services/prep_pool.h"

namespace sluice::server {

// One prompt, ready for the engine.
struct PreparedPrompt {
  std::vector<int32_t> tokens;
  std::string echo;  // completions with echo: the prompt text
};

// A chat request's tool-call grammar, compiled before generation (see chat_tools.h).
struct ToolConstraint {
  std::shared_ptr<grammar::CompiledGrammar> grammar;
  std::optional<engine::GrammarTrigger> trigger;  // tool_choice auto: where it starts
};

void set_error(Response& response, const proto::ApiError& error);
TokenPiece token_piece(const ModelService& model);

// Everything after parsing, shared by every API. `tools`: a chat request's tool-call
// grammar, which replaces the request's own constraint (they never come together).
asio::awaitable<void> generate(Exchange& ex, ModelService& model, GenerationJob& job,
                               const proto::GenerationOptions& options, std::vector<PreparedPrompt> prompts,
                               const ResponseShape& shape, const config::Config& config, PrepPool& prep,
                               const ToolConstraint* tools = nullptr);

// The model a request names, or the error: 400 for a speech model, 503 while models
// are still loading, 404 once they are all in.
ModelService* find_model(Exchange& ex, const ModelServices& services, const std::string& name);

std::optional<proto::ApiError> check_timeout(const proto::GenerationOptions& options, const config::Config& config);
proto::ParseOptions parse_options(const config::Config& config);
void log_ignored(const Exchange& ex, const proto::GenerationOptions& options);

// The body parsed by `parse` on the tokenizer pool (a body of megabytes costs
// milliseconds: off the I/O thread too), its ignored fields logged and its timeout
// checked. On a refusal the response is set and nothing is returned.
template <class Request, class Parse>
asio::awaitable<std::optional<Request>> parse_body(Exchange& ex, const config::Config& config, PrepPool& prep,
                                                   Parse parse) {
  auto parsed_or_busy = co_await prep.run([&] { return parse(ex.request.body(), parse_options(config)); });
  if (!parsed_or_busy) {
    set_error(ex.response, prep_pool_full(prep));
    co_return std::nullopt;
  }
  if (auto* error = std::get_if<proto::ApiError>(&*parsed_or_busy)) {
    set_error(ex.response, *error);
    co_return std::nullopt;
  }
  Request request = std::get<Request>(std::move(*parsed_or_busy));
  log_ignored(ex, request);
  if (auto error = check_timeout(request, config)) {
    set_error(ex.response, *error);
    co_return std::nullopt;
  }
  co_return request;
}

// A chat request ready for the engine: its tool plan, its rendered and tokenized
// prompt and its tool-call grammar.
struct PreparedChat {
  ChatToolPlan plan;
  std::vector<int32_t> tokens;
  ToolConstraint tools;
};

// Plans the tools, renders the chat template on the tokenizer pool, tokenizes and
// compiles the tool grammar. `body` is the chat-completions body text the request
// was parsed from (its tools are re-read from it in the client's key order).
asio::awaitable<std::optional<PreparedChat>> prepare_chat(Exchange& ex, ModelService& model,
                                                          const proto::ChatRequest& request, std::string_view body,
                                                          const config::Config& config, PrepPool& prep);

}  // namespace sluice::server
