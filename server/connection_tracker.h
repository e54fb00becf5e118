#pragma once
// Knows every open client connection, and whether it is between requests, so that
// a shutdown can close the idle ones at once and the busy ones as soon as their
// response is out. Locked inside: any thread may call it. Sockets themselves are
// only touched on their connection's strand.
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "server/http.h"

namespace sluice::server {

// One client connection; the session coroutine and the tracker share it.
struct Connection {
  explicit Connection(asio::ip::tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;  // its executor is the connection's strand
};

class ConnectionTracker {
 public:
  using Handle = std::shared_ptr<Connection>;

  void add(const Handle& connection);
  void remove(const Handle& connection);
  size_t size() const;

  // The connection waits for its next request. Returns false while draining: the
  // session should close rather than wait.
  bool enter_idle(const Handle& connection);
  void enter_busy(const Handle& connection);

  // Starts draining: closes idle connections now; busy ones close after their
  // response. `on_drained` runs (on the thread that removed the last connection)
  // once none is left, immediately if none is open.
  void begin_drain(std::function<void()> on_drained);
  bool is_draining() const;

  // Grace period over: closes every connection, busy or not.
  void close_all();

 private:
  bool is_busy(const Handle& connection) const;
  // Runs on the connection's strand.
  static void close_now(const Handle& connection);

  mutable std::mutex mutex_;
  std::unordered_map<Connection*, std::pair<Handle, bool /*busy*/>> connections_;
  bool draining_ = false;
  std::function<void()> on_drained_;
};

}  // namespace sluice::server
