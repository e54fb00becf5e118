#pragma once
// The speech routes: POST /v1/audio/speech (OpenAI's, with vLLM-Omni's extensions)
// answered as one audio body, a chunked audio stream (stream_format "audio") or
// server-sent speech.audio.* events (stream_format "sse"); and GET /v1/audio/voices,
// the voices of each speech model. Handlers run on the connection's strand and wait
// for engine events without blocking it.
#include "config/config.h"
#include "server/services/model_service.h"
#include "server/services/model_services.h"
#include "server/http/router.h"

namespace sluice::server {

void add_speech_routes(Router& router, const ModelServices& services, const config::Config& config);

}  // namespace sluice::server
