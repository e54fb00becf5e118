#pragma once
// Knows every open client connection, and whether it is between requests, so that
// a shutdown can close the idle ones at once and the busy ones as soon as their
// response is out. It also decides whether a new connection may open at all:
//   - a regular slot while fewer than max_connections are open and its address
//     holds fewer than max_per_address (0: no per-address cap);
//   - otherwise one of `probe_slots` slots kept beyond the cap for a single
//     /health, /ready or /metrics request (anything else is answered 503 there), so
//     that a liveness probe still gets through when idle or slow clients hold every
//     regular slot. When the probe slots are all taken, the oldest one whose request
//     header has not arrived yet is closed to make room: connections that send
//     nothing cannot hold them;
//   - otherwise it is refused (503).
// Locked inside: any thread may call it. Sockets themselves are only touched on
// their connection's strand.
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "server/http/http.h"

namespace sluice::server {

// One client connection; the session coroutine and the tracker share it.
struct Connection {
  explicit Connection(asio::ip::tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;  // its executor is the connection's strand
  bool probe_only = false;   // set by admit(): serves one probe request, nothing else
};

struct ConnectionLimits {
  size_t max_connections = 1024;
  size_t max_per_address = 0;  // 0: none
  size_t probe_slots = 0;      // beyond max_connections, for /health, /ready, /metrics
};

class ConnectionTracker {
 public:
  using Handle = std::shared_ptr<Connection>;
  enum class Admission { regular, probe_only, refused };

  explicit ConnectionTracker(ConnectionLimits limits = {}) : limits_(limits) {}

  // Registers a new connection from `address` (its remote IP) when it may open, and
  // sets its probe_only flag; refused connections are not registered.
  Admission admit(const Handle& connection, const std::string& address);
  void remove(const Handle& connection);
  size_t size() const;

  // The connection waits for its next request. Returns false while draining: the
  // session should close rather than wait.
  bool enter_idle(const Handle& connection);
  void enter_busy(const Handle& connection);
  // A probe-slot connection's request header is in: it is no longer the first to
  // be closed for a newcomer.
  void header_arrived(const Handle& connection);

  // Starts draining: closes idle connections now; busy ones close after their
  // response. `on_drained` runs (on the thread that removed the last connection)
  // once none is left, immediately if none is open.
  void begin_drain(std::function<void()> on_drained);
  bool is_draining() const;

  // Grace period over: closes every connection, busy or not.
  void close_all();

 private:
  struct Entry {
    Handle handle;
    std::string address;
    uint64_t order = 0;          // admission order: lower is older
    bool busy = true;
    bool probe_only = false;
    bool header_arrived = false;  // probe slots only
    bool evicted = false;         // probe slots only: closing to make room
  };

  // Under mutex_: closes the oldest probe-slot connection still waiting for its
  // header; false when there is none.
  bool evict_waiting_probe();
  bool is_busy(const Handle& connection) const;
  // Runs on the connection's strand.
  static void close_now(const Handle& connection);

  const ConnectionLimits limits_;
  mutable std::mutex mutex_;
  std::unordered_map<Connection*, Entry> connections_;
  std::unordered_map<std::string, size_t> regular_per_address_;
  size_t num_regular_ = 0;
  size_t num_probe_ = 0;  // probe-slot connections not evicted
  uint64_t next_order_ = 0;
  bool draining_ = false;
  std::function<void()> on_drained_;
};

}  // namespace sluice::server
