#pragma once
// OpenAI's Responses API: POST /v1/responses (whole or streamed as named SSE
// events), GET /v1/responses/{id} and DELETE /v1/responses/{id}. A request is
// served as the chat request it maps to (proto/responses_api.h) on the same engine
// path as /v1/chat/completions: tools, tool_choice and text.format become the same
// grammar, the output goes through the same parser, and responses_format.h writes it.
// With store (the default) the response and its conversation are kept in the
// ResponseStore, so that previous_response_id continues it.
#include "config/config.h"
#include "server/http/router.h"
#include "server/services/model_services.h"
#include "server/services/prep_pool.h"
#include "server/services/response_store.h"

namespace sluice::server {

void add_responses_routes(Router& router, const ModelServices& services, const config::Config& config,
                          PrepPool& prep, ResponseStore& store);

ResponseStoreLimits response_store_limits(const config::Config& config);

}  // namespace sluice::server
