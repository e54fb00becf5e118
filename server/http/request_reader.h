#pragma once
// Reads one request from a connection into a Beast parser, feeding the parser here
// instead of through http::async_read, for two reasons:
//  - Beast throws std::length_error from inside the parser for a field (header or
//    trailer) of 64 KiB or more. Thrown inside http::async_read it escapes into
//    io_context::run and aborts the process; here it becomes an error code.
//  - Beast's own header limit only bounds the bytes it holds back unparsed: it takes
//    each complete header field as it arrives, so a header sent in pieces never
//    reaches it and grows without bound. Here every byte of the header counts.
//  - Beast holds a chunked body's trailer section, and each chunk-size line, in the
//    read buffer until all of it has arrived, with no limit of its own. Here those
//    held-back bytes count against what the header left of max_header_bytes.
// Used by one session, on its connection's strand.
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>

#include <cstddef>

#include "server/http/http.h"

namespace sluice::server {

using RequestParser = http::request_parser<http::string_body>;

// How far feed_parser should take the parser.
enum class ParseGoal { header, message };

// Feeds the buffered bytes to the parser and consumes what it took. Returns success
// once the goal is reached, http::error::need_more when it wants more bytes,
// http::error::header_limit when the header passes `max_bytes` or a field is too
// large for Beast, and any other parser error as it is. `consumed` grows by the
// bytes the parser took.
// `max_bytes` bounds, for ParseGoal::header, every byte of the header: `consumed`
// (which the caller starts at 0 for the request and keeps across calls) plus what
// waits unparsed. For ParseGoal::message it bounds the bytes waiting unparsed: a
// trailer section or a chunk-size line, which Beast takes only whole.
beast::error_code feed_parser(RequestParser& parser, beast::flat_buffer& buffer, ParseGoal goal,
                              std::size_t max_bytes, std::size_t& consumed);

// Reads from `stream` (under the deadline its caller set) until `goal`. Errors as
// feed_parser's, plus the stream's; the peer closing before the goal is
// http::error::end_of_stream when no byte of the request came, partial_message
// otherwise.
asio::awaitable<beast::error_code> read_request_part(beast::tcp_stream& stream,
                                                     beast::flat_buffer& buffer,
                                                     RequestParser& parser, ParseGoal goal,
                                                     std::size_t max_bytes,
                                                     std::size_t& consumed);

}  // namespace sluice::server
