// ChunkedWriter on a real loopback connection: what reaches the client byte for byte
// (the header, chunk framing, the last chunk), HTTP/1.0's close-delimited body, and
// what happens when the client goes away or stops reading.
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/beast/http/parser.hpp>

#include <string>

#include "server/http/chunked_writer.h"
#include "tests/unit/server/http/loopback_pair.h"

namespace unit_server_http_test_chunked_writer {

using namespace sluice::server;

namespace {

// One streamed response's handler side: the request it answers and its Exchange.
struct StreamedResponse {
  testing::LoopbackPair pair;
  Request request;
  ClientLink link{pair.server, pair.buffer};
  Exchange ex{request, "req-7", {}, {}, &link, {}};

  explicit StreamedResponse(unsigned version = 11, bool keep_alive = true) : request(http::verb::post, "/v1/x", version) {
    request.keep_alive(keep_alive);
    ex.decorate = [](Response& response) { response.set("X-Request-Id", "req-7"); };
  }

  // Runs `body` (a coroutine) on the connection's strand to its end.
  template <class Body>
  void run(Body body) {
    asio::co_spawn(pair.strand, body(), [](std::exception_ptr e) {
      if (e) std::rethrow_exception(e);
    });
    pair.ioc.restart();
    pair.ioc.run();
  }
};

size_t header_size(const std::string& wire) { return wire.find("\r\n\r\n") + 4; }

// What a real HTTP client makes of the bytes.
http::response<http::string_body> parse_response(const std::string& wire, bool eof) {
  http::response_parser<http::string_body> parser;
  parser.eager(true);
  beast::error_code ec;
  size_t used = 0;
  while (used < wire.size() && !parser.is_done()) {
    const size_t n = parser.put(asio::buffer(wire.data() + used, wire.size() - used), ec);
    REQUIRE_MESSAGE(!ec, ec.message());
    if (n == 0) break;
    used += n;
  }
  if (eof && !parser.is_done()) {
    parser.put_eof(ec);
    REQUIRE_MESSAGE(!ec, ec.message());
  }
  REQUIRE(parser.is_done());
  return parser.release();
}

}  // namespace

TEST_CASE("chunked writer: a 200 header, one chunk per send in hex-sized frames, then the last chunk") {
  StreamedResponse h;
  const std::string event = "data: {\"a\":1}\n\n";  // 15 bytes
  const std::string big(300, 'x');                   // 0x12c
  const std::string nothing;
  bool begun = false, sent_empty = false;
  h.run([&]() -> asio::awaitable<void> {
    ChunkedWriter writer(h.ex);
    begun = co_await writer.begin();
    co_await writer.send(event);
    sent_empty = co_await writer.send(nothing);  // writes no frame: an empty one would end the body
    co_await writer.send(big);
    co_await writer.end();
  });
  CHECK(begun);
  CHECK(sent_empty);
  const std::string wire = h.pair.client_read_until("0\r\n\r\n");
  const size_t head = header_size(wire);
  CHECK(wire.substr(head) == "f\r\n" + event + "\r\n12c\r\n" + big + "\r\n0\r\n\r\n");

  const auto response = parse_response(wire, false);
  CHECK(response.result() == http::status::ok);
  CHECK(response.chunked());
  CHECK(response.keep_alive());
  CHECK(response[http::field::content_type] == "text/event-stream");
  CHECK(response[http::field::cache_control] == "no-cache");
  CHECK(response["X-Accel-Buffering"] == "no");
  CHECK(response["X-Request-Id"] == "req-7");  // the headers every response gets
  CHECK(response.body() == event + big);

  CHECK(h.ex.response_sent);  // the session writes nothing more
  CHECK(h.ex.response.result() == http::status::ok);  // what the access log reports
  CHECK(h.ex.bytes_sent == head + event.size() + big.size());
  CHECK(h.ex.keep_alive_after);  // ended cleanly: the connection serves the next request
}

TEST_CASE("chunked writer: the content type given, and Connection: close when the request asked for it") {
  StreamedResponse h(11, /*keep_alive=*/false);
  const std::string audio(4, '\x01');
  h.run([&]() -> asio::awaitable<void> {
    ChunkedWriter writer(h.ex, "audio/pcm");
    co_await writer.begin();
    co_await writer.send(audio);
    co_await writer.end();
  });
  const std::string wire = h.pair.client_read_until("0\r\n\r\n");
  const auto response = parse_response(wire, false);
  CHECK(response[http::field::content_type] == "audio/pcm");
  CHECK_FALSE(response.keep_alive());
  CHECK(response.body() == audio);
  CHECK_FALSE(h.ex.keep_alive_after);
}

TEST_CASE("chunked writer: an HTTP/1.0 client gets the bytes as they are, ended by the close") {
  StreamedResponse h(10);
  const std::string first = "data: 1\n\n", second = "data: [DONE]\n\n";
  h.run([&]() -> asio::awaitable<void> {
    ChunkedWriter writer(h.ex);
    co_await writer.begin();
    co_await writer.send(first);
    co_await writer.send(second);
    co_await writer.end();  // writes nothing: the close ends the body
  });
  CHECK_FALSE(h.ex.keep_alive_after);  // so the session closes the connection
  h.pair.server.close();
  const std::string wire = h.pair.client_read_to_close();
  const size_t head = header_size(wire);
  CHECK(wire.substr(head) == first + second);
  const auto response = parse_response(wire, true);
  CHECK_FALSE(response.chunked());
  CHECK(response[http::field::connection] == "close");
  CHECK(response.body() == first + second);
  CHECK(h.ex.bytes_sent == head + first.size() + second.size());
}

TEST_CASE("chunked writer: once the client is gone, sends fail and nothing more is written") {
  StreamedResponse h;
  const std::string event = "data: x\n\n";
  bool begun = false, failed = false, sent_after = true;
  uint64_t bytes_when_broken = 0;
  h.run([&]() -> asio::awaitable<void> {
    ChunkedWriter writer(h.ex);
    begun = co_await writer.begin();
    h.pair.client_reset();
    // The first writes may still land in the kernel's buffer; one soon fails.
    for (int i = 0; i < 1000 && !failed; ++i) failed = !(co_await writer.send(event));
    bytes_when_broken = h.ex.bytes_sent;
    sent_after = co_await writer.send(event);
    co_await writer.end();
    CHECK(writer.is_broken());
  });
  CHECK(begun);
  CHECK(failed);
  CHECK_FALSE(sent_after);
  CHECK(h.ex.bytes_sent == bytes_when_broken);  // a failed send counts nothing
  CHECK_FALSE(h.ex.keep_alive_after);           // never reused
}

TEST_CASE("chunked writer: begin() to a client that already reset the connection says so") {
  StreamedResponse h;
  h.pair.client_reset();
  char byte = 0;
  beast::error_code ec;
  h.pair.server.socket().read_some(asio::buffer(&byte, 1), ec);  // blocks until the reset is in
  REQUIRE(ec);
  bool begun = true;
  h.run([&]() -> asio::awaitable<void> {
    ChunkedWriter writer(h.ex);
    begun = co_await writer.begin();
    CHECK(writer.is_broken());
  });
  CHECK_FALSE(begun);
  CHECK(h.ex.response_sent);  // the session must not try to write a response of its own
}

TEST_CASE("chunked writer: a client that stops reading fails a send after the write timeout") {
  StreamedResponse h;
  h.link.write_timeout_s = 0.2;
  const std::string megabyte(1 << 20, 'a');
  bool failed = false;
  int num_sent = 0;
  h.run([&]() -> asio::awaitable<void> {
    ChunkedWriter writer(h.ex);
    co_await writer.begin();
    // The client reads nothing: the socket buffers fill, then a write waits out its timeout.
    while (num_sent < 256 && !failed) {
      failed = !(co_await writer.send(megabyte));
      if (!failed) ++num_sent;
    }
    CHECK(writer.is_broken());
  });
  CHECK(failed);
  CHECK(num_sent < 256);
}
}  // namespace unit_server_http_test_chunked_writer
