#include "server/http/http_server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <system_error>
#include <thread>
#include <vector>

namespace sluice::server {

using asio::ip::tcp;

HttpServer::HttpServer(const config::Config& config, const Dispatcher& dispatcher,
                       HttpMetrics& metrics, ServiceState& state)
    : config_(config),
      state_(state),
      metrics_(metrics),
      ioc_(num_threads()),
      control_(asio::make_strand(ioc_)),
      acceptor_(control_),
      signals_(control_, SIGINT, SIGTERM),
      grace_timer_(control_),
      tracker_(ConnectionLimits{.max_connections = static_cast<size_t>(config.max_connections),
                                .max_per_address = static_cast<size_t>(config.max_connections_per_address),
                                .probe_slots = static_cast<size_t>(config.probe_connections)}),
      session_ctx_{config, dispatcher, metrics, tracker_} {}

int HttpServer::num_threads() const {
  if (config_.http_threads > 0) return config_.http_threads;
  return std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
}

void HttpServer::listen() {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(config_.host, ec);
  tcp::endpoint endpoint;
  if (ec) {
    // A host name such as "localhost": take its first address.
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(config_.host, std::to_string(config_.port), ec);
    if (ec || results.empty())
      throw std::system_error(ec, "cannot resolve host '" + config_.host + "'");
    endpoint = results.begin()->endpoint();
  } else {
    endpoint = tcp::endpoint(address, config_.port);
  }
  std::string where = config_.host + ":" + std::to_string(config_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::system_error(ec, "cannot listen on " + where);
  port_ = acceptor_.local_endpoint().port();
}

void HttpServer::run() {
  asio::co_spawn(control_, accept_loop(), asio::detached);
  wait_for_signal();
  int threads = num_threads();
  spdlog::info("listening on http://{}:{} ({} I/O threads)", config_.host, port_, threads);
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([this] { run_io_thread(); });
  run_io_thread();
  for (auto& thread : pool) thread.join();
  spdlog::info("server stopped");
}

void HttpServer::run_io_thread() {
  // A handler that throws would end the thread and, with it, the process: log it
  // and go on serving. (Sessions catch their own; this is the last net.)
  for (;;) {
    try {
      ioc_.run();
      return;
    } catch (const std::exception& e) {
      spdlog::error("an I/O handler failed: {}", e.what());
    } catch (...) {
      spdlog::error("an I/O handler failed with an exception of unknown type");
    }
  }
}

asio::awaitable<void> HttpServer::accept_loop() {
  for (;;) {
    try {
      if (!co_await accept_one()) co_return;
    } catch (const std::exception& e) {
      // Out of memory for one connection must not stop the listener.
      spdlog::error("accepting a connection failed: {}", e.what());
    } catch (...) {
      spdlog::error("accepting a connection failed with an exception of unknown type");
    }
  }
}

asio::awaitable<bool> HttpServer::accept_one() {
  // Each connection gets its own strand: its coroutine never runs on two threads at once.
  auto [ec, socket] = co_await acceptor_.async_accept(asio::make_strand(ioc_), use_nothrow);
  if (ec) {
    if (!acceptor_.is_open()) co_return false;  // closed by shutdown
    spdlog::warn("accept failed: {}", ec.message());
    if (ec == asio::error::no_descriptors) {
      // Out of file descriptors: back off instead of spinning.
      asio::steady_timer pause(control_, std::chrono::milliseconds(100));
      co_await pause.async_wait(use_nothrow);
    }
    co_return true;
  }
  socket.set_option(tcp::no_delay(true), ec);
  auto endpoint = socket.remote_endpoint(ec);
  const std::string address = ec ? std::string("-") : endpoint.address().to_string();
  auto connection = std::make_shared<Connection>(std::move(socket));
  // Over the caps: a probe slot (one /health, /ready or /metrics request) or a 503.
  if (tracker_.admit(connection, address) == ConnectionTracker::Admission::refused) {
    metrics_.connections_rejected.Increment();
    auto executor = connection->stream.get_executor();
    asio::co_spawn(executor, reject_connection(connection->stream.release_socket()), asio::detached);
    co_return true;
  }
  asio::co_spawn(connection->stream.get_executor(), run_session(connection, session_ctx_), asio::detached);
  co_return true;
}

void HttpServer::wait_for_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal_number) {
    if (ec) return;  // cancelled: drained
    spdlog::info("received {}", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
    on_shutdown_requested();
    if (shutdown_started_) wait_for_signal();  // a second signal forces the close
  });
}

void HttpServer::begin_shutdown() {
  asio::post(control_, [this] { on_shutdown_requested(); });
}

void HttpServer::on_shutdown_requested() {
  if (shutdown_started_) {
    force_close("second shutdown request");
    return;
  }
  shutdown_started_ = true;
  state_.draining = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  spdlog::info("shutting down: no new connections; {} open, {:.0f}s grace for in-flight requests",
               tracker_.size(), config_.shutdown_grace_s);

  grace_timer_.expires_after(std::chrono::milliseconds(
      static_cast<int64_t>(config_.shutdown_grace_s * 1000.0)));
  grace_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    if (!grace_hook_) return force_close("grace period over");
    spdlog::warn("grace period over: ending the requests still in flight");
    grace_hook_();
    grace_timer_.expires_after(std::chrono::seconds(1));
    grace_timer_.async_wait([this](const boost::system::error_code& ec2) {
      if (!ec2) force_close("grace period over");
    });
  });
  tracker_.begin_drain([this] {
    // Runs where the last connection closed; timer and signals live on control_.
    asio::post(control_, [this] {
      spdlog::info("all connections drained");
      grace_timer_.cancel();
      boost::system::error_code ignored;
      signals_.cancel(ignored);
    });
  });
}

void HttpServer::force_close(const char* why) {
  spdlog::warn("{}: closing {} connections", why, tracker_.size());
  tracker_.close_all();
  boost::system::error_code ignored;
  signals_.cancel(ignored);
  // Sessions end as their sockets close; stop the loop even if one lingers.
  grace_timer_.expires_after(std::chrono::seconds(1));
  grace_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) ioc_.stop();
  });
}

}  // namespace sluice::server
