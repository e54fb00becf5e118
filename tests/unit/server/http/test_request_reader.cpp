#include <doctest/doctest.h>

#include <boost/asio/buffer.hpp>

#include <cstdio>
#include <string>

#include "server/http/request_reader.h"

namespace unit_server_http_test_request_reader {

using namespace sluice::server;

namespace {

constexpr std::size_t kNoPendingLimit = 1u << 30;

void append(beast::flat_buffer& buffer, const std::string& bytes) {
  auto space = buffer.prepare(bytes.size());
  asio::buffer_copy(space, asio::buffer(bytes));
  buffer.commit(bytes.size());
}

// A parser as the session makes one: header limit set, body unlimited until the
// header is in.
struct Feed {
  RequestParser parser;
  beast::flat_buffer buffer;
  std::size_t consumed = 0;

  explicit Feed(std::size_t header_limit) { parser.header_limit(static_cast<std::uint32_t>(header_limit)); }

  beast::error_code put(const std::string& bytes, ParseGoal goal, std::size_t max_pending) {
    append(buffer, bytes);
    return feed_parser(parser, buffer, goal, max_pending, consumed);
  }
};

const std::string kChunkedHead =
    "POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";

}  // namespace

TEST_CASE("a complete request parses; bytes after it stay for the next one") {
  Feed feed(16 * 1024);
  std::string request = "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}";
  CHECK_FALSE(feed.put(request + "G", ParseGoal::header, 16 * 1024));
  CHECK(feed.parser.is_header_done());
  CHECK_FALSE(feed.put("", ParseGoal::message, 16 * 1024));
  CHECK(feed.parser.is_done());
  CHECK(feed.parser.get().body() == "{}");
  CHECK(feed.consumed == request.size());
  CHECK(feed.buffer.size() == 1);  // the pipelined "G"
}

TEST_CASE("a header field of 64 KiB or more is header_limit, not an exception") {
  // Beast's basic_fields throws std::length_error for such a value; the header
  // limit here is raised so that the parser gets as far as storing it.
  Feed feed(200000);
  std::string request = "GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(70000, 'a') + "\r\n\r\n";
  beast::error_code ec;
  CHECK_NOTHROW(ec = feed.put(request, ParseGoal::header, 200000));
  CHECK(ec == http::error::header_limit);
}

TEST_CASE("a trailer field of 64 KiB or more is header_limit, not an exception") {
  Feed feed(16 * 1024);
  REQUIRE_FALSE(feed.put(kChunkedHead, ParseGoal::header, 16 * 1024));
  std::string body = "2\r\n{}\r\n0\r\nX-Trailer: " + std::string(70000, 'b') + "\r\n\r\n";
  beast::error_code ec;
  // No pending limit: the whole trailer reaches the parser, which then throws inside.
  CHECK_NOTHROW(ec = feed.put(body, ParseGoal::message, kNoPendingLimit));
  CHECK(ec == http::error::header_limit);
}

TEST_CASE("trailers share the header's byte budget") {
  const std::size_t header_limit = 4096;
  Feed feed(header_limit);
  REQUIRE_FALSE(feed.put(kChunkedHead, ParseGoal::header, header_limit));
  const std::size_t budget = header_limit - feed.consumed;

  // Each trailer is small; together they outgrow what the header left.
  std::string trailers;
  for (int i = 0; i < 64; ++i) trailers += "X-T" + std::to_string(i) + ": " + std::string(100, 'c') + "\r\n";
  REQUIRE(trailers.size() > budget);
  beast::error_code ec = feed.put("2\r\n{}\r\n0\r\n" + trailers, ParseGoal::message, budget);
  CHECK(ec == http::error::header_limit);
  CHECK_FALSE(feed.parser.is_done());
}

TEST_CASE("trailers within the budget are accepted") {
  Feed feed(4096);
  REQUIRE_FALSE(feed.put(kChunkedHead, ParseGoal::header, 4096));
  std::string body = "2\r\n{}\r\n0\r\nX-Checksum: abc\r\n\r\n";
  // Bytes arrive a few at a time, as over a slow link.
  beast::error_code ec = http::error::need_more;
  for (std::size_t i = 0; i < body.size() && ec == http::error::need_more; i += 3) {
    ec = feed.put(body.substr(i, 3), ParseGoal::message, 4096 - 100);
  }
  CHECK_FALSE(ec);
  REQUIRE(feed.parser.is_done());
  CHECK(feed.parser.get().body() == "{}");
  CHECK(feed.parser.get()["X-Checksum"] == "abc");
}

TEST_CASE("chunk data does not count as held-back bytes") {
  // A chunk far larger than the trailer budget streams through the parser.
  Feed feed(4096);
  REQUIRE_FALSE(feed.put(kChunkedHead, ParseGoal::header, 4096));
  std::string data(100000, 'd');
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  CHECK(feed.put(size + data.substr(0, 50000), ParseGoal::message, 64) == http::error::need_more);
  CHECK(feed.put(data.substr(50000) + "\r\n0\r\n\r\n", ParseGoal::message, 64) == beast::error_code{});
  CHECK(feed.parser.get().body().size() == data.size());
}

TEST_CASE("a header sent in pieces counts whole against the limit") {
  // Beast parses a field once the next line's first byte shows it is not folded,
  // takes it, and holds back only the rest. Pieces that end one byte into a field
  // leave a byte pending, so counting pending bytes never saw the header grow.
  const std::size_t limit = 16 * 1024;
  Feed feed(limit);
  std::string field = "X-Pad: ";
  field += std::string(100 - field.size() - 2, 'h') + "\r\n";  // 100 bytes
  std::string fields;
  for (int i = 0; i < 40 * 20; ++i) fields += field;  // 80 KB, never ended
  beast::error_code ec = feed.put("GET /health HTTP/1.1\r\nHost: t\r\n" + fields.substr(0, 1), ParseGoal::header, limit);
  const std::size_t piece = 4000;  // 40 fields: each piece ends one byte into a field
  std::size_t sent = 1;
  while (sent + piece <= fields.size() && ec == http::error::need_more) {
    ec = feed.put(fields.substr(sent, piece), ParseGoal::header, limit);
    sent += piece;
  }
  CHECK(ec == http::error::header_limit);
  CHECK(sent <= limit + piece);  // refused as soon as it passed the limit
  CHECK_FALSE(feed.parser.is_header_done());
}

TEST_CASE("a header whose last piece completes it past the limit is refused") {
  const std::size_t limit = 4096;
  Feed feed(limit);
  std::string fields;
  for (int i = 0; i < 60; ++i) fields += "X-F" + std::to_string(i) + ": " + std::string(90, 'h') + "\r\n";
  REQUIRE(feed.put("GET /health HTTP/1.1\r\n" + fields.substr(0, 3000), ParseGoal::header, limit) ==
          http::error::need_more);
  // The rest arrives at once: in it, no field is pending after the parser's pass.
  CHECK(feed.put(fields.substr(3000) + "\r\n", ParseGoal::header, limit) == http::error::header_limit);
}
}  // namespace unit_server_http_test_request_reader
