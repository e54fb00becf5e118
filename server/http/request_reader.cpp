#include "server/http/request_reader.h"

#include <boost/beast/core/read_size.hpp>

#include <new>
#include <stdexcept>

namespace sluice::server {
namespace {

bool is_reached(const RequestParser& parser, ParseGoal goal) {
  return goal == ParseGoal::header ? parser.is_header_done() : parser.is_done();
}

// Bytes asked of one socket read: as http::read_some does.
constexpr std::size_t kReadChunk = 64 * 1024;

// The bytes that count against the limit (see feed_parser in the header).
std::size_t counted_bytes(ParseGoal goal, std::size_t consumed, std::size_t pending) {
  return goal == ParseGoal::header ? consumed + pending : pending;
}

}  // namespace

beast::error_code feed_parser(RequestParser& parser, beast::flat_buffer& buffer, ParseGoal goal,
                              std::size_t max_bytes, std::size_t& consumed) {
  // Past the header the parser should take every byte it can in one call: chunk
  // after chunk, then the trailers.
  parser.eager(goal == ParseGoal::message);
  beast::error_code ec;
  try {
    while (!is_reached(parser, goal)) {
      if (buffer.size() == 0) return http::error::need_more;
      std::size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      consumed += used;
      // Checked before the header is known to be done: a header that passed the
      // limit is refused even when its last piece completes it.
      if (goal == ParseGoal::header && consumed > max_bytes) return http::error::header_limit;
      if (ec == http::error::need_more || (!ec && used == 0)) {
        if (counted_bytes(goal, consumed, buffer.size()) > max_bytes) return http::error::header_limit;
        return http::error::need_more;
      }
      if (ec) return ec;
    }
  } catch (const std::length_error&) {
    // basic_fields refuses a name or value of 64 KiB or more.
    return http::error::header_limit;
  } catch (const std::bad_alloc&) {
    return asio::error::no_memory;
  }
  return {};
}

asio::awaitable<beast::error_code> read_request_part(beast::tcp_stream& stream,
                                                     beast::flat_buffer& buffer,
                                                     RequestParser& parser, ParseGoal goal,
                                                     std::size_t max_bytes,
                                                     std::size_t& consumed) {
  for (;;) {
    beast::error_code ec = feed_parser(parser, buffer, goal, max_bytes, consumed);
    if (ec != http::error::need_more) co_return ec;
    auto space = buffer.prepare(beast::read_size(buffer, kReadChunk));
    auto [read_ec, n] = co_await stream.async_read_some(space, use_nothrow);
    buffer.commit(n);
    if (read_ec == asio::error::eof) {
      co_return parser.got_some() ? beast::error_code(http::error::partial_message)
                                  : beast::error_code(http::error::end_of_stream);
    }
    if (read_ec) co_return read_ec;
  }
}

}  // namespace sluice::server
