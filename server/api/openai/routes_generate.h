#pragma once
// The OpenAI generation routes: POST /v1/completions and POST /v1/chat/completions,
// whole JSON bodies or server-sent event streams; and vLLM's POST /tokenize and
// POST /detokenize. Handlers run on the connection's strand and wait for engine
// events without blocking it; tokenizing and chat templates run on the PrepPool.
#include "config/config.h"
#include "server/services/model_service.h"
#include "server/services/model_services.h"
#include "server/services/prep_pool.h"
#include "server/http/router.h"

namespace sluice::server {

void add_generation_routes(Router& router, const ModelServices& services, const config::Config& config,
                           PrepPool& prep);

void add_tokenize_routes(Router& router, const ModelServices& services, const config::Config& config,
                         PrepPool& prep);

}  // namespace sluice::server
