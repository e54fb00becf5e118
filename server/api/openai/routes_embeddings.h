#pragma once
// POST /v1/embeddings: texts (tokenized on the PrepPool) or token ids, one engine
// request per input as a prefill-only sequence beside generation; the answer is
// each input's pooled, L2-normalized final hidden state (engine/pooling.h).
#include "config/config.h"
#include "server/http/router.h"
#include "server/services/model_services.h"
#include "server/services/prep_pool.h"

namespace sluice::server {

void add_embeddings_routes(Router& router, const ModelServices& services, const config::Config& config,
                           PrepPool& prep);

}  // namespace sluice::server
