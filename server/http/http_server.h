#pragma once
// The listener and its threads: N I/O threads on one io_context, a coroutine per
// connection on its own strand, SIGINT/SIGTERM handling and the graceful drain.
// Construct, listen() and run() from one thread; begin_shutdown() from any.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <functional>

#include "config/config.h"
#include "server/http/connection_tracker.h"
#include "server/http/dispatcher.h"
#include "server/metrics/http_metrics.h"
#include "server/services/service_state.h"
#include "server/http/session.h"

namespace sluice::server {

class HttpServer {
 public:
  HttpServer(const config::Config& config, const Dispatcher& dispatcher, HttpMetrics& metrics,
             ServiceState& state);

  // Binds host:port; throws std::system_error naming the address on failure.
  void listen();
  uint16_t port() const { return port_; }

  // Serves until a signal or begin_shutdown() has drained every connection, or
  // the grace period ran out. Returns on the calling thread.
  void run();

  // Stops accepting, closes idle connections, lets busy ones finish within the
  // grace period. A second call (a second signal) closes everything at once.
  void begin_shutdown();

  // Runs on an I/O thread when the grace period ends with requests still in flight;
  // their connections are closed a second later. The daemon stops its engines here,
  // so that streams still running end with a finish instead of a cut. Set before run().
  void on_grace_over(std::function<void()> hook) { grace_hook_ = std::move(hook); }

 private:
  asio::awaitable<void> accept_loop();
  asio::awaitable<bool> accept_one();  // false: the acceptor closed
  void run_io_thread();
  void wait_for_signal();
  void on_shutdown_requested();
  void force_close(const char* why);
  int num_threads() const;

  const config::Config& config_;
  ServiceState& state_;
  HttpMetrics& metrics_;
  asio::io_context ioc_;
  asio::strand<asio::io_context::executor_type> control_;  // acceptor, signals, timer
  asio::ip::tcp::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer grace_timer_;
  ConnectionTracker tracker_;
  SessionContext session_ctx_;
  uint16_t port_ = 0;
  bool shutdown_started_ = false;  // on control_
  std::function<void()> grace_hook_;
};

}  // namespace sluice::server
