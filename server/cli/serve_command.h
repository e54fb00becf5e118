#pragma once
// `sluice serve`: wires the config into the HTTP server, loads the models in the
// background (readiness flips when they are in), and runs until shut down.
#include "config/config.h"

namespace sluice::server {

// Returns the process exit code: 0 after a graceful shutdown, 1 when the daemon
// could not start or a model failed to load.
int run_serve(const config::Config& config);

// Sets the global spdlog logger's level and format.
void setup_logging(const std::string& level);

}  // namespace sluice::server
