#include "server/http/chunked_writer.h"

#include <boost/asio/write.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include <chrono>
#include <cstdio>

namespace sluice::server {
namespace {

std::chrono::milliseconds write_deadline(const ClientLink& link) {
  return std::chrono::milliseconds(static_cast<int64_t>(link.write_timeout_s * 1000.0));
}

}  // namespace

asio::awaitable<bool> ChunkedWriter::begin() {
  ClientLink& link = *ex_.connection;
  Response& header = ex_.response;
  header.result(http::status::ok);
  header.set(http::field::content_type, content_type_);
  header.set(http::field::cache_control, "no-cache");
  header.set("X-Accel-Buffering", "no");  // proxies must not hold the stream back
  header.body().clear();
  if (is_close_delimited()) {
    // HTTP/1.0 has no chunked coding: the body is the bytes up to the close.
    header.keep_alive(false);
    header.set(http::field::connection, "close");
  } else {
    header.keep_alive(ex_.request.keep_alive());
    header.chunked(true);
  }
  if (ex_.decorate) ex_.decorate(header);
  ex_.response_sent = true;

  http::response_serializer<http::string_body> serializer(header);
  link.stream.expires_after(write_deadline(link));
  auto [ec, n] = co_await http::async_write_header(link.stream, serializer, use_nothrow);
  link.stream.expires_never();
  ex_.bytes_sent += n;
  if (ec) is_broken_ = true;
  co_return !ec;
}

asio::awaitable<bool> ChunkedWriter::write(const std::string& bytes) {
  if (is_broken_) co_return false;
  ClientLink& link = *ex_.connection;
  link.stream.expires_after(write_deadline(link));
  auto [ec, n] = co_await asio::async_write(link.stream, asio::buffer(bytes), use_nothrow);
  link.stream.expires_never();
  if (ec) is_broken_ = true;
  co_return !ec;
}

bool ChunkedWriter::is_close_delimited() const { return ex_.request.version() < 11; }

asio::awaitable<bool> ChunkedWriter::send(const std::string& bytes) {
  if (bytes.empty()) co_return !is_broken_;
  if (is_close_delimited()) {
    bool ok = co_await write(bytes);
    if (ok) ex_.bytes_sent += bytes.size();
    co_return ok;
  }
  // Chunked transfer coding: hex size, CRLF, data, CRLF.
  char size[24];
  const int len = std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  std::string frame;
  frame.reserve(static_cast<size_t>(len) + bytes.size() + 2);
  frame.append(size, static_cast<size_t>(len)).append(bytes).append("\r\n");
  bool ok = co_await write(frame);
  if (ok) ex_.bytes_sent += bytes.size();
  co_return ok;
}

asio::awaitable<void> ChunkedWriter::end() {
  // Close-delimited: the session closes the connection (keep_alive_after stays
  // false), and the close ends the body.
  if (is_close_delimited()) co_return;
  const std::string last = "0\r\n\r\n";
  bool ok = co_await write(last);
  if (ok) ex_.keep_alive_after = ex_.request.keep_alive();
}

}  // namespace sluice::server
