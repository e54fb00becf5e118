#pragma once
// /v1/audio/voices: GET lists every speech model's voices (checkpoint speakers,
// OpenAI aliases, and a Base model's uploaded voices); POST uploads a voice to a
// Base model (multipart/form-data as vLLM-Omni takes it: file `audio_sample`,
// fields `name`, `consent`, optional `ref_text`, `x_vector_only_mode`, `model`);
// DELETE /v1/audio/voices/{name} removes one. Handlers run on the connection's
// strand; a clip's encoding and the voice file's write run on the model's cloning
// thread.
#include "server/http/router.h"
#include "server/services/model_services.h"

namespace sluice::server {

void add_voice_routes(Router& router, const ModelServices& services);

}  // namespace sluice::server
