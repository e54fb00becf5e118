#pragma once
// Short names for the Beast types every server file uses.
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sluice::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// Completion token for coroutines that want error codes as values, not exceptions.
inline constexpr auto use_nothrow = asio::as_tuple(asio::use_awaitable);

}  // namespace sluice::server
