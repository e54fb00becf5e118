#pragma once
// The life of one client connection as a coroutine on its own strand: read a
// request within its deadlines, dispatch it, write the response, and repeat while
// keep-alive holds. Slow or silent clients run into the idle, header, body and
// write timeouts, so none can pin a connection or a thread.
#include <chrono>

#include "config/config.h"
#include "server/http/connection_tracker.h"
#include "server/http/dispatcher.h"
#include "server/metrics/http_metrics.h"

namespace sluice::server {

// What every session shares; owned by the HttpServer.
struct SessionContext {
  const config::Config& config;
  const Dispatcher& dispatcher;
  HttpMetrics& metrics;
  ConnectionTracker& tracker;
};

asio::awaitable<void> run_session(ConnectionTracker::Handle connection, const SessionContext& ctx);

// Answers a connection over the max_connections cap with a 503 and closes it.
asio::awaitable<void> reject_connection(asio::ip::tcp::socket socket);

}  // namespace sluice::server
