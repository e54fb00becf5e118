#pragma once
// What the generation routes share once their prepare job (request_prep.h) is done:
// `generate` submits the prompts, then writes what the GenerationJob makes of the
// engine's events (one JSON body or an SSE stream) while watching the client. Used
// by the OpenAI routes (routes_generate.cpp), the Anthropic Messages route
// (routes_messages.cpp) and the Responses route (routes_responses.cpp); errors are
// written in the route's dialect (Exchange::dialect).
#include <spdlog/spdlog.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "engine/request.h"
#include "proto/errors.h"
#include "proto/generation_options.h"
#include "server/api/generation/generation_job.h"
#include "server/api/request_prep.h"
#include "server/api/generation/response_budget.h"
#include "server/http/router.h"
#include "server/services/model_service.h"

namespace sluice::server {

// One prompt, ready for the engine.
struct PreparedPrompt {
  std::vector<int32_t> tokens;
  std::string echo;  // completions with echo: the prompt text
};

TokenPiece token_piece(const ModelService& model);

// Everything after the prepare job, shared by the APIs: `constraint` is the output
// constraint the job compiled (the request's, or a chat request's tool-call grammar).
asio::awaitable<void> generate(Exchange& ex, ModelService& model, GenerationJob& job,
                               const proto::GenerationOptions& options, std::vector<PreparedPrompt> prompts,
                               const ResponseShape& shape, const config::Config& config,
                               const OutputConstraint& constraint);

void log_ignored(const Exchange& ex, const proto::GenerationOptions& options);

}  // namespace sluice::server
