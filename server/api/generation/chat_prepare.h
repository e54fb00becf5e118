#pragma once
// A parsed chat request made ready for the engine, shared by /v1/chat/completions,
// /v1/messages and /v1/responses, inside the request's prepare job (request_prep.h):
// the model's template and tools checked (chat_tools.h), the messages rendered and
// tokenized, and the output constraint compiled (the tool-call grammar, or else the
// request's structured output). Errors use the chat API's parameter names; the
// routes of the other APIs rename them (proto::in_messages_terms, in_responses_terms).
#include <vector>

#include "config/config.h"
#include "proto/chat.h"
#include "server/api/generation/chat_tools.h"
#include "server/api/request_prep.h"

namespace sluice::server {

struct PreparedChat {
  std::vector<int32_t> tokens;  // the rendered prompt
  ChatToolPlan plan;
  OutputConstraint constraint;  // empty unless compiled and the request asks for one
};

// `compile_constraint` false: the prompt only (count_tokens).
OrError<PreparedChat> prepare_chat(ModelService& model, const proto::ChatRequest& request,
                                   const config::Config& config, bool compile_constraint = true);

}  // namespace sluice::server
