#pragma once
// The routes routers and gateways read from a replica (replica_info.h): GET /get_load
// and /load, /get_server_info and /server_info, /get_model_info and /model_info, open
// without an API key like /health (routers carry none by default, and they reveal no
// more than /metrics), and POST /flush_cache, which drops every prefix-cache block no
// request holds, of every text model, and needs a key when keys are set.
#include "server/http/router.h"
#include "server/services/model_services.h"
#include "server/services/prep_pool.h"

namespace sluice::server {

// /flush_cache waits for the engines on a `prep` thread (each engine flushes between
// two of its steps), at most kFlushWaitSeconds.
inline constexpr int kFlushWaitSeconds = 30;

void add_replica_routes(Router& router, const ModelServices& services, PrepPool& prep);

}  // namespace sluice::server
