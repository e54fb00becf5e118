#pragma once
// A parsed chat request made ready for the engine, shared by /v1/chat/completions
// and /v1/messages: the model's template and tools checked (chat_tools.h), the
// messages rendered and tokenized on the tokenizer pool, and the tool-call grammar
// compiled. On a refusal the response is set (an OpenAI error body) and nothing is
// returned.
#include <optional>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "proto/chat.h"
#include "server/api/chat_tools.h"
#include "server/api/generate_common.h"

namespace sluice::server {

struct PreparedChat {
  std::vector<int32_t> tokens;  // the rendered prompt
  ChatToolPlan plan;
  ToolConstraint tools;         // empty unless compile_tools and a call is constrained
};

// How an API that maps its requests onto chat names the chat code's error
// parameters (proto::in_messages_terms, proto::in_responses_terms); null: as chat.
using ErrorTerms = proto::ApiError (*)(proto::ApiError);

// `body`: the request as a /v1/chat/completions body (the tools' schemas are read
// from it in the client's key order). `compile_tools` false: the prompt only.
asio::awaitable<std::optional<PreparedChat>> prepare_chat(Exchange& ex, ModelService& model,
                                                          const proto::ChatRequest& request, std::string_view body,
                                                          const config::Config& config, PrepPool& prep,
                                                          bool compile_tools = true, ErrorTerms terms = nullptr);

}  // namespace sluice::server
