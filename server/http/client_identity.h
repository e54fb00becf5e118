#pragma once
// Who sent a request, for sharing the engine's queue fairly between clients
// (engine/scheduling/fair_order.h): the API key of `x-api-key` or `Authorization: Bearer`, and only when
// api_keys are configured, so the key was checked. Without keys a client could name
// itself anything (and every default client sends the same placeholder), so each
// request then stands for itself.
#include <cstdint>

#include "config/config.h"
#include "server/http/http.h"

namespace sluice::server {

// A hash of the client's API key, never 0; 0 when there is no checked identity.
uint64_t client_identity(const Request& request, const config::Config& config);

}  // namespace sluice::server
