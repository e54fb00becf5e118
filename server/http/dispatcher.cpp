#include "server/http/dispatcher.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "proto/errors.h"
#include "server/http/api_error.h"

namespace sluice::server {
namespace {

// A queue drains in well under a second at typical decode rates.
constexpr std::string_view kRetryAfterSeconds = "1";

}  // namespace

void set_error_response(Response& response, int status, std::string body) {
  response.result(static_cast<unsigned>(status));
  response.set(http::field::content_type, "application/json");
  response.body() = std::move(body);
}

void Dispatcher::decorate(const Request& request, const std::string& request_id,
                          Response& response) const {
  response.set(http::field::server, "sluice");
  response.set("X-Request-Id", request_id);
  cors_.decorate(request, response);
  // Every 429 (a full queue, whoever made it) tells the client when to come back,
  // so well-behaved clients back off instead of hammering.
  if (response.result() == http::status::too_many_requests &&
      response.find(http::field::retry_after) == response.end()) {
    response.set(http::field::retry_after, kRetryAfterSeconds);
  }
}

asio::awaitable<Dispatched> Dispatcher::dispatch(const Request& request,
                                                 const std::string& request_id,
                                                 ClientLink* connection) const {
  Dispatched out;
  out.response.version(request.version());
  out.route = "unmatched";

  if (cors_.is_enabled() && cors_.is_preflight(request)) {
    // Browsers send preflights without credentials, so they come before auth.
    cors_.answer_preflight(request, out.response);
    out.response.set(http::field::server, "sluice");
    out.response.set("X-Request-Id", request_id);
    co_return out;
  }

  RouteMatch match = router_.match(request.method(), request.target());
  bool is_public = match.route && match.route->is_public;
  if (!is_public && !auth_.allows(request)) {
    // Unknown paths ask for a key too, so they reveal nothing about the routes.
    set_api_error(out.response, proto::unauthorized(), match.dialect);
    out.response.set(http::field::www_authenticate, "Bearer");
  } else if (match.kind == RouteMatch::Kind::not_found) {
    set_api_error(out.response, proto::not_found_route(std::string(request.method_string()),
                                                       std::string(request.target())));
  } else if (match.kind == RouteMatch::Kind::method_not_allowed) {
    std::string path(request.target().substr(0, request.target().find('?')));
    set_api_error(out.response, proto::method_not_allowed(std::string(request.method_string()), path),
                  match.dialect);
    out.response.set(http::field::allow, match.allow);
  } else {
    out.route = Router::metrics_label(match);
    Exchange exchange{request, request_id, std::move(match.params), {}, connection, {}};
    exchange.dialect = match.dialect;
    exchange.response.version(request.version());
    exchange.decorate = [this, &request, &request_id](Response& response) {
      decorate(request, request_id, response);
    };
    std::exception_ptr failure;
    try {
      co_await match.route->handler(exchange);
      out.response = std::move(exchange.response);
    } catch (...) {
      failure = std::current_exception();
    }
    if (exchange.response_sent) {
      // Whatever happened, the client has its headers already: nothing more to send.
      out.sent = true;
      out.keep_alive = exchange.keep_alive_after && !failure;
      out.bytes_sent = exchange.bytes_sent;
      if (failure) {
        out.response = Response{};
        out.response.result(http::status::ok);
        spdlog::error("request {}: failed after its response began", request_id);
      }
      co_return out;
    }
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const std::exception& e) {
        spdlog::error("request {}: {} {} failed: {}", request_id,
                      std::string_view(request.method_string()), std::string_view(request.target()),
                      e.what());
      } catch (...) {
        spdlog::error("request {}: failed with a non-standard exception", request_id);
      }
      out.response = Response{};
      out.response.version(request.version());
      set_api_error(out.response, proto::internal_error(request_id), match.dialect);
    }
  }
  decorate(request, request_id, out.response);
  co_return out;
}

}  // namespace sluice::server
