#pragma once
// The Anthropic Messages API: POST /v1/messages (a whole message or Anthropic's
// event stream) and POST /v1/messages/count_tokens, served by the chat pipeline
// (chat_prepare.h, generate_common.h) with proto/anthropic_messages.h's parser and
// MessagesFormat; every error in Anthropic's shape.
#include "config/config.h"
#include "server/http/router.h"
#include "server/services/model_services.h"
#include "server/services/prep_pool.h"

namespace sluice::server {

void add_messages_routes(Router& router, const ModelServices& services, const config::Config& config,
                         PrepPool& prep);

}  // namespace sluice::server
