#include <doctest/doctest.h>

#include "server/http/router.h"

namespace unit_server_http_test_router {

using namespace sluice::server;

namespace {

Handler noop() {
  return [](Exchange&) -> asio::awaitable<void> { co_return; };
}

Router make_router() {
  Router router;
  router.add(http::verb::get, "/health", noop(), true);
  router.add(http::verb::get, "/v1/models", noop());
  router.add(http::verb::get, "/v1/models/{id}", noop());
  router.add(http::verb::post, "/v1/completions", noop());
  router.add(http::verb::get, "/a/{x}/b", noop());
  return router;
}

}  // namespace

TEST_CASE("exact routes match and report their pattern") {
  Router router = make_router();
  auto match = router.match(http::verb::get, "/health");
  REQUIRE(match.kind == RouteMatch::Kind::found);
  CHECK(match.route->is_public);
  CHECK(Router::metrics_label(match) == "/health");
  CHECK(router.match(http::verb::get, "/health?verbose=1").kind == RouteMatch::Kind::found);
}

TEST_CASE("unknown paths are not found and labelled 'unmatched'") {
  Router router = make_router();
  for (const char* target : {"/", "/healthz", "/health/", "/v1", "/v1/models/", "", "health"}) {
    CAPTURE(target);
    auto match = router.match(http::verb::get, target);
    CHECK(match.kind == RouteMatch::Kind::not_found);
    CHECK(Router::metrics_label(match) == "unmatched");
  }
}

TEST_CASE("a known path with the wrong method is 405 with the allowed methods") {
  Router router = make_router();
  auto match = router.match(http::verb::post, "/health");
  CHECK(match.kind == RouteMatch::Kind::method_not_allowed);
  CHECK(match.allow == "GET, HEAD");
  auto other = router.match(http::verb::get, "/v1/completions");
  CHECK(other.kind == RouteMatch::Kind::method_not_allowed);
  CHECK(other.allow == "POST");
}

TEST_CASE("HEAD matches every GET route and nothing else") {
  Router router = make_router();
  auto match = router.match(http::verb::head, "/v1/models/org/m");
  REQUIRE(match.kind == RouteMatch::Kind::found);
  CHECK(match.route->method == http::verb::get);
  CHECK(Router::metrics_label(match) == "/v1/models/{id}");
  REQUIRE(match.params.size() == 1);
  CHECK(match.params[0].second == "org/m");

  auto post_only = router.match(http::verb::head, "/v1/completions");
  CHECK(post_only.kind == RouteMatch::Kind::method_not_allowed);
  CHECK(post_only.allow == "POST");
  CHECK(router.match(http::verb::head, "/nope").kind == RouteMatch::Kind::not_found);
}

TEST_CASE("a trailing placeholder takes the rest of the path, decoded") {
  Router router = make_router();
  auto match = router.match(http::verb::get, "/v1/models/HuggingFaceTB/SmolLM2%20x");
  REQUIRE(match.kind == RouteMatch::Kind::found);
  CHECK(match.route->pattern == "/v1/models/{id}");
  REQUIRE(match.params.size() == 1);
  CHECK(match.params[0].second == "HuggingFaceTB/SmolLM2 x");
  CHECK(router.match(http::verb::get, "/v1/models/%zz").kind == RouteMatch::Kind::not_found);
}

TEST_CASE("an inner placeholder takes one segment") {
  Router router = make_router();
  auto match = router.match(http::verb::get, "/a/one/b");
  REQUIRE(match.kind == RouteMatch::Kind::found);
  CHECK(match.params[0].second == "one");
  CHECK(router.match(http::verb::get, "/a/one/two/b").kind == RouteMatch::Kind::not_found);
  CHECK(router.match(http::verb::get, "/a//b").kind == RouteMatch::Kind::not_found);
}

TEST_CASE("percent_decode rejects malformed escapes") {
  std::string out;
  CHECK(percent_decode("a%2Fb", out));
  CHECK(out == "a/b");
  CHECK_FALSE(percent_decode("a%2", out));
  CHECK_FALSE(percent_decode("%", out));
  CHECK_FALSE(percent_decode("%g0", out));
}
}  // namespace unit_server_http_test_router
