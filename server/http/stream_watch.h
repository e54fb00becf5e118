#pragma once
// Waits, on the connection's strand, for engine events of a request's streams or for
// the client to leave, without holding a thread.
//
// Each attached RequestStream's wake-up (engine thread) posts to the strand, which
// marks the watch pending and cancels its timer. A read on the socket runs alongside:
// an error there (EOF, reset, the server closing it) means the client is gone; bytes
// there (a pipelined next request) stay in the session's buffer and end the watching.
// Owned and used by one handler on one strand; finish() before the handler returns.
#include <boost/asio/steady_timer.hpp>

#include <memory>

#include "engine/request_stream.h"
#include "server/http/router.h"

namespace sluice::server {

class StreamWatch {
 public:
  // `link` null: no socket to watch (the client never counts as gone).
  StreamWatch(asio::any_io_executor strand, ClientLink* link);
  ~StreamWatch();
  StreamWatch(const StreamWatch&) = delete;
  StreamWatch& operator=(const StreamWatch&) = delete;

  void attach(engine::RequestStream& stream);

  // Returns once an attached stream may have events, the client left, or a second
  // passed (a safety net: callers drain with try_pop and wait again).
  asio::awaitable<void> wait();
  bool is_client_gone() const;

  // Stops watching the socket and waits until its read has ended, so the session
  // owns the socket and buffer again.
  asio::awaitable<void> finish();

  struct State;  // stream_watch.cpp; shared with the wake-ups and the socket read

 private:
  std::shared_ptr<State> state_;
  ClientLink* link_;
  std::vector<engine::RequestStream*> streams_;
};

}  // namespace sluice::server
