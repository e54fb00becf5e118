#pragma once
// Writes one streamed response on the connection itself: a chunked 200 header (the
// content type given: text/event-stream for server-sent events, audio/... for
// streamed speech; no-cache, plus the headers every response gets and any the
// handler set), one chunk per send, then the last chunk. An HTTP/1.0 client cannot
// read chunks: it gets the bytes as they are, with Connection: close, and the close
// ends the body. Used on the connection's strand by one handler; marks the Exchange
// as sent, so the session writes nothing after it.
#include <string>
#include <utility>

#include "server/http/router.h"

namespace sluice::server {

class ChunkedWriter {
 public:
  explicit ChunkedWriter(Exchange& ex, std::string content_type = "text/event-stream")
      : ex_(ex), content_type_(std::move(content_type)) {}

  // Writes the header. False when the client is gone (nothing more will be written).
  asio::awaitable<bool> begin();
  // One chunk holding `bytes` (for SSE, events already framed "data: ...\n\n");
  // nothing for none. False on a write error.
  asio::awaitable<bool> send(const std::string& bytes);
  // The terminating chunk; the connection may then serve another request.
  // Close-delimited (HTTP/1.0): nothing, and the session closes the connection.
  asio::awaitable<void> end();

  bool is_broken() const { return is_broken_; }

 private:
  bool is_close_delimited() const;
  // `bytes` is a whole chunk frame; a named string, never a temporary (g++ 12 frees
  // temporaries of a co_await's full-expression too early in some cases).
  asio::awaitable<bool> write(const std::string& bytes);

  Exchange& ex_;
  std::string content_type_;
  bool is_broken_ = false;
};

}  // namespace sluice::server
