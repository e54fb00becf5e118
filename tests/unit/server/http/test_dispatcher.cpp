#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "server/http/dispatcher.h"

namespace unit_server_http_test_dispatcher {

using namespace sluice::server;

namespace {

struct Fixture {
  Router router;
  ApiKeyAuth auth;
  Cors cors;
  Dispatcher dispatcher;

  explicit Fixture(std::vector<std::string> keys = {}, std::vector<std::string> origins = {})
      : auth(std::move(keys)), cors(std::move(origins)), dispatcher(router, auth, cors) {
    router.add(
        http::verb::get, "/health",
        [](Exchange& ex) -> asio::awaitable<void> {
          ex.response.result(http::status::ok);
          ex.response.body() = "ok";
          co_return;
        },
        true);
    router.add(http::verb::get, "/v1/models", [](Exchange& ex) -> asio::awaitable<void> {
      ex.response.result(http::status::ok);
      ex.response.body() = "models";
      co_return;
    });
    // An Anthropic route: its refusals (401, 405, 500) are written in Anthropic's shape.
    router.add(
        http::verb::post, "/v1/messages",
        [](Exchange& ex) -> asio::awaitable<void> {
          ex.response.result(http::status::ok);
          co_return;
        },
        false, ErrorDialect::anthropic);
    router.add(http::verb::post, "/busy", [](Exchange& ex) -> asio::awaitable<void> {
      ex.response.result(http::status::too_many_requests);
      ex.response.body() = R"({"error":{"message":"busy","type":"rate_limit_error","param":null,"code":"queue_full"}})";
      co_return;
    });
    router.add(http::verb::get, "/boom", [](Exchange&) -> asio::awaitable<void> {
      throw std::runtime_error("secret internals");
      co_return;
    });
  }

  Dispatched run(const Request& request) {
    asio::io_context ioc;
    std::optional<Dispatched> out;
    // dispatch() is a coroutine that keeps its reference arguments: the id must
    // outlive ioc.run(), not only the co_spawn expression (ASan: stack-use-after-scope).
    const std::string request_id = "req-test";
    asio::co_spawn(ioc, dispatcher.dispatch(request, request_id),
                   [&](std::exception_ptr, Dispatched value) { out = std::move(value); });
    ioc.run();
    REQUIRE(out.has_value());
    return std::move(*out);
  }
};

Request make_request(http::verb method, const char* target) {
  Request request{method, target, 11};
  return request;
}

nlohmann::json error_of(const Response& response) {
  return nlohmann::json::parse(response.body())["error"];
}

}  // namespace

TEST_CASE("404 and 405 come as OpenAI errors, 405 with Allow") {
  Fixture f;
  auto missing = f.run(make_request(http::verb::get, "/nope"));
  CHECK(missing.response.result_int() == 404);
  CHECK(error_of(missing.response)["code"] == "not_found");
  CHECK(missing.route == "unmatched");
  CHECK(missing.response["X-Request-Id"] == "req-test");

  auto wrong = f.run(make_request(http::verb::delete_, "/health"));
  CHECK(wrong.response.result_int() == 405);
  CHECK(wrong.response[http::field::allow] == "GET, HEAD");
  CHECK(error_of(wrong.response)["type"] == "invalid_request_error");
}

TEST_CASE("every 429 carries Retry-After, and no other status does") {
  Fixture f;
  auto busy = f.run(make_request(http::verb::post, "/busy"));
  CHECK(busy.response.result_int() == 429);
  CHECK(busy.response[http::field::retry_after] == "1");

  auto fine = f.run(make_request(http::verb::get, "/health"));
  CHECK(fine.response.count(http::field::retry_after) == 0);
}

TEST_CASE("HEAD reaches the GET handler, which fills the response as for GET") {
  Fixture f;
  auto head = f.run(make_request(http::verb::head, "/v1/models"));
  CHECK(head.response.result_int() == 200);
  CHECK(head.response.body() == "models");  // the session sends the headers only
  CHECK(head.route == "/v1/models");
}

TEST_CASE("API keys guard every route but the public ones") {
  Fixture f({"k1", "k2"});
  auto open = f.run(make_request(http::verb::get, "/health"));
  CHECK(open.response.result_int() == 200);

  auto denied = f.run(make_request(http::verb::get, "/v1/models"));
  CHECK(denied.response.result_int() == 401);
  CHECK(error_of(denied.response)["code"] == "invalid_api_key");
  CHECK(denied.response[http::field::www_authenticate] == "Bearer");

  auto unknown = f.run(make_request(http::verb::get, "/secret-route"));
  CHECK(unknown.response.result_int() == 401);

  for (const char* header : {"Bearer k2", "bearer k1"}) {
    auto request = make_request(http::verb::get, "/v1/models");
    request.set(http::field::authorization, header);
    CHECK(f.run(request).response.result_int() == 200);
  }
  for (const char* header : {"Bearer k", "Bearer k11", "Basic k1", "k1", "Bearer "}) {
    CAPTURE(header);
    auto request = make_request(http::verb::get, "/v1/models");
    request.set(http::field::authorization, header);
    CHECK(f.run(request).response.result_int() == 401);
  }
}

TEST_CASE("API keys: x-api-key (Anthropic's clients) is accepted beside Bearer") {
  Fixture f({"k1", "k2"});
  auto request = make_request(http::verb::get, "/v1/models");
  request.set("x-api-key", "k2");
  CHECK(f.run(request).response.result_int() == 200);
  for (const char* key : {"k", "k11", "", "Bearer k1"}) {
    CAPTURE(key);
    auto wrong = make_request(http::verb::get, "/v1/models");
    wrong.set("x-api-key", key);
    CHECK(f.run(wrong).response.result_int() == 401);
  }
  // Refused on the Messages API: Anthropic's error shape.
  auto messages = make_request(http::verb::post, "/v1/messages");
  auto refused = f.run(messages);
  CHECK(refused.response.result_int() == 401);
  const auto body = nlohmann::json::parse(refused.response.body());
  CHECK(body["type"] == "error");
  CHECK(body["error"]["type"] == "authentication_error");
  // A wrong method on it, with a right key: the 405 is Anthropic's shape too.
  auto get = make_request(http::verb::get, "/v1/messages");
  get.set("x-api-key", "k1");
  auto wrong_method = f.run(get);
  CHECK(wrong_method.response.result_int() == 405);
  CHECK(nlohmann::json::parse(wrong_method.response.body())["error"]["type"] == "invalid_request_error");
  CHECK(nlohmann::json::parse(wrong_method.response.body())["type"] == "error");
  // A wrong x-api-key does not spoil a right Bearer key.
  auto both = make_request(http::verb::get, "/v1/models");
  both.set("x-api-key", "nope");
  both.set(http::field::authorization, "Bearer k1");
  CHECK(f.run(both).response.result_int() == 200);
}

TEST_CASE("CORS preflight answers allowed origins and refuses others") {
  Fixture f({"key"}, {"https://app.example"});
  auto preflight = make_request(http::verb::options, "/v1/models");
  preflight.set(http::field::origin, "https://app.example");
  preflight.set(http::field::access_control_request_method, "GET");
  preflight.set(http::field::access_control_request_headers, "authorization");
  auto ok = f.run(preflight);
  CHECK(ok.response.result_int() == 204);  // no API key needed for a preflight
  CHECK(ok.response[http::field::access_control_allow_origin] == "https://app.example");
  CHECK(ok.response[http::field::access_control_allow_headers] == "authorization");
  CHECK(ok.response[http::field::vary] == "Origin");

  preflight.set(http::field::origin, "https://evil.example");
  CHECK(f.run(preflight).response.result_int() == 403);

  auto simple = make_request(http::verb::get, "/health");
  simple.set(http::field::origin, "https://app.example");
  auto decorated = f.run(simple);
  CHECK(decorated.response[http::field::access_control_allow_origin] == "https://app.example");
  CHECK(decorated.response[http::field::access_control_expose_headers] == "X-Request-Id");
}

TEST_CASE("CORS off: no CORS headers, OPTIONS is just another method") {
  Fixture f;
  auto preflight = make_request(http::verb::options, "/health");
  preflight.set(http::field::origin, "https://app.example");
  preflight.set(http::field::access_control_request_method, "GET");
  auto result = f.run(preflight);
  CHECK(result.response.result_int() == 405);
  CHECK(result.response.count(http::field::access_control_allow_origin) == 0);
}

TEST_CASE("wildcard origin") {
  Fixture f({}, {"*"});
  auto request = make_request(http::verb::get, "/health");
  request.set(http::field::origin, "http://anything");
  CHECK(f.run(request).response[http::field::access_control_allow_origin] == "*");
}

TEST_CASE("a throwing handler becomes a 500 naming only the request id") {
  Fixture f;
  auto result = f.run(make_request(http::verb::get, "/boom"));
  CHECK(result.response.result_int() == 500);
  CHECK(result.route == "/boom");
  auto error = error_of(result.response);
  CHECK(error["type"] == "server_error");
  std::string message = error["message"];
  CHECK(message.find("req-test") != std::string::npos);
  CHECK(message.find("secret") == std::string::npos);
}

TEST_CASE("request ids: a usable client id is kept, anything else replaced") {
  Request request{http::verb::get, "/", 11};
  request.set("X-Request-Id", "abc-123");
  CHECK(request_id_for(request) == "abc-123");
  request.set("X-Request-Id", "has space");
  CHECK(request_id_for(request).rfind("req-", 0) == 0);
  request.set("X-Request-Id", std::string(129, 'a'));
  CHECK(request_id_for(request).rfind("req-", 0) == 0);
  CHECK(make_request_id() != make_request_id());
  CHECK(make_request_id().size() == 36);
}

TEST_CASE("a handler that sends its own response: headers decorated, nothing left to send") {
  Fixture f({}, {"*"});
  f.router.add(http::verb::get, "/stream", [](Exchange& ex) -> asio::awaitable<void> {
    REQUIRE(ex.decorate);
    ex.response.result(http::status::ok);
    ex.decorate(ex.response);  // as ChunkedWriter does before writing the header
    ex.response_sent = true;
    ex.keep_alive_after = true;
    ex.bytes_sent = 42;
    co_return;
  });
  f.router.add(http::verb::get, "/stream-boom", [](Exchange& ex) -> asio::awaitable<void> {
    ex.response_sent = true;
    ex.keep_alive_after = true;
    throw std::runtime_error("after the header");
    co_return;
  });
  Request request = make_request(http::verb::get, "/stream");
  request.set(http::field::origin, "https://a.example");
  auto sent = f.run(request);
  CHECK(sent.sent);
  CHECK(sent.keep_alive);
  CHECK(sent.bytes_sent == 42);
  CHECK(sent.route == "/stream");
  CHECK(sent.response.result_int() == 200);
  CHECK(sent.response["X-Request-Id"] == "req-test");
  CHECK(sent.response[http::field::access_control_allow_origin] != "");

  auto failed = f.run(make_request(http::verb::get, "/stream-boom"));
  CHECK(failed.sent);
  CHECK_FALSE(failed.keep_alive);  // the stream broke off: the connection must close
}
}  // namespace unit_server_http_test_dispatcher
