#pragma once
// Maps (method, path) to a handler. Built once at start, read-only afterwards, so
// any I/O thread may call match() concurrently.
//
// Patterns are literal segments plus `{name}` placeholders; a placeholder that ends
// the pattern takes the rest of the path, slashes included, so model ids such as
// "org/model" work in /v1/models/{id}.
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/beast/core/flat_buffer.hpp>

#include "server/http/http.h"

namespace sluice::server {

// The connection a request arrived on, for handlers that write their own response
// (SSE streams) or watch for the client leaving. Used only on the connection's strand.
struct ClientLink {
  beast::tcp_stream& stream;
  beast::flat_buffer& buffer;  // the session's read buffer: bytes read here stay for it
  double write_timeout_s = 60;
};

// One request and its response as a route handler sees them.
// The error shape of a route's API (api_error.h).
enum class ErrorDialect { openai, anthropic };

struct Exchange {
  const Request& request;
  std::string request_id;
  std::vector<std::pair<std::string, std::string>> params;  // from the pattern, decoded
  Response response;  // the handler fills it; the session adds common headers and sends it

  // Streaming handlers: null in unit tests and other socket-less dispatches.
  ClientLink* connection = nullptr;
  // Adds the headers every response gets (request id, CORS) to a response the
  // handler sends itself.
  std::function<void(Response&)> decorate;
  // Set by a handler that wrote the response itself: the session then writes
  // nothing, and logs and counts `response`'s status with `bytes_sent`.
  bool response_sent = false;
  bool keep_alive_after = false;  // the written response ended cleanly and allows reuse
  uint64_t bytes_sent = 0;
  ErrorDialect dialect = ErrorDialect::openai;  // the route's: how its errors are written

  std::string_view param(std::string_view name) const;
};

using Handler = std::function<asio::awaitable<void>(Exchange&)>;

struct Route {
  http::verb method;
  std::string pattern;
  bool is_public;  // reachable without an API key (probes, scrapers)
  Handler handler;
  ErrorDialect dialect = ErrorDialect::openai;
};

struct RouteMatch {
  enum class Kind { found, not_found, method_not_allowed };
  Kind kind = Kind::not_found;
  const Route* route = nullptr;
  std::vector<std::pair<std::string, std::string>> params;
  std::string allow;  // for method_not_allowed: the methods the path does accept
  ErrorDialect dialect = ErrorDialect::openai;  // found or method_not_allowed: the path's API
};

class Router {
 public:
  void add(http::verb method, std::string pattern, Handler handler, bool is_public = false,
           ErrorDialect dialect = ErrorDialect::openai);

  // `target` is the request target; a query string is ignored. HEAD matches the
  // GET routes (the session sends their headers without the body).
  RouteMatch match(http::verb method, std::string_view target) const;

  // The route's pattern, or "unmatched": a bounded label set for metrics.
  static std::string_view metrics_label(const RouteMatch& match);

 private:
  std::vector<Route> routes_;
};

// Decodes %XX escapes; returns false on a malformed escape.
bool percent_decode(std::string_view in, std::string& out);

}  // namespace sluice::server
