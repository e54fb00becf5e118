#pragma once
// Turns one parsed request into a response: CORS preflight, routing (404/405), API
// keys, then the route's handler, whose exceptions become a 500 that names only the
// request id. No sockets here, so the whole policy is unit-testable. Read-only
// after construction: any I/O thread may call dispatch().
#include <string>
#include <string_view>

#include "server/http/middleware.h"
#include "server/http/router.h"

namespace sluice::server {

struct Dispatched {
  Response response;       // when sent: its header as written (status for the log)
  std::string_view route;  // metrics label: the pattern, or "unmatched"
  bool sent = false;       // the handler wrote the response itself
  bool keep_alive = false;  // sent only: the connection may serve another request
  uint64_t bytes_sent = 0;
};

class Dispatcher {
 public:
  Dispatcher(const Router& router, const ApiKeyAuth& auth, const Cors& cors)
      : router_(router), auth_(auth), cors_(cors) {}

  // The response carries X-Request-Id and CORS headers; keep-alive and the
  // payload size are the session's business.
  // `connection` lets streaming handlers write to the socket; null: they cannot.
  asio::awaitable<Dispatched> dispatch(const Request& request, const std::string& request_id,
                                       ClientLink* connection = nullptr) const;

  // Headers every response gets, including those the session makes itself (413, 431);
  // a 429 also gets Retry-After.
  void decorate(const Request& request, const std::string& request_id, Response& response) const;

 private:
  const Router& router_;
  const ApiKeyAuth& auth_;
  const Cors& cors_;
};

// An error response in OpenAI shape.
void set_error_response(Response& response, int status, std::string body);

}  // namespace sluice::server
