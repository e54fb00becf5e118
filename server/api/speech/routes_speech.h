#pragma once
// The speech routes: POST /v1/audio/speech (OpenAI's, with vLLM-Omni's extensions)
// answered as one audio body, a chunked audio stream (stream_format "audio") or
// server-sent speech.audio.* events (stream_format "sse"); a Base model clones the
// voice of the request's reference (speech_clone.h). /v1/audio/voices is
// routes_voices.h's. Handlers run on the connection's strand and wait for engine
// events without blocking it: the body's parse and the prompt run on `prep`, the
// audio encoding on `encoder`.
#include "config/config.h"
#include "server/api/request_prep.h"
#include "server/services/model_service.h"
#include "server/services/model_services.h"
#include "server/http/router.h"

namespace sluice::server {

void add_speech_routes(Router& router, const ModelServices& services, const config::Config& config, PrepPool& prep,
                       PrepPool& encoder);

// The speech model a request names, or the error: 400 for a text model, 503 while
// models are still loading, 404 once they are all in.
OrError<SpeechService*> speech_model(const ModelServices& services, const std::string& name);
// The same, with the error set on `response` and null returned.
SpeechService* find_speech_model(Response& response, const ModelServices& services, const std::string& name);

}  // namespace sluice::server
