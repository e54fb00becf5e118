#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "proto/errors.h"

namespace unit_proto_test_errors {

using namespace sluice::proto;

TEST_CASE("error bodies have the OpenAI shape with null param and code when absent") {
  auto body = nlohmann::json::parse(error_body(invalid_request("bad value", "")));
  REQUIRE(body.contains("error"));
  CHECK(body["error"]["message"] == "bad value");
  CHECK(body["error"]["type"] == "invalid_request_error");
  CHECK(body["error"]["param"].is_null());
  CHECK(body["error"]["code"].is_null());
  CHECK(body["error"].size() == 4);
}

TEST_CASE("errors carry status, param and code") {
  auto error = model_not_found("nope");
  CHECK(error.status == 404);
  auto body = nlohmann::json::parse(error_body(error));
  CHECK(body["error"]["param"] == "model");
  CHECK(body["error"]["code"] == "model_not_found");
  CHECK(unauthorized().status == 401);
  CHECK(payload_too_large(10).status == 413);
  CHECK(header_too_large().status == 431);
  CHECK(too_many_connections().status == 503);
  CHECK(method_not_allowed("POST", "/health").status == 405);
}

TEST_CASE("internal errors name the request id and nothing else") {
  auto error = internal_error("req-123");
  CHECK(error.status == 500);
  CHECK(error.message.find("req-123") != std::string::npos);
  CHECK(error.type == "server_error");
}

TEST_CASE("invalid UTF-8 in a message is replaced, not thrown on") {
  std::string bad = "path \xff\xfe";
  std::string body;
  CHECK_NOTHROW(body = error_body(not_found_route("GET", bad)));
  CHECK(nlohmann::json::parse(body)["error"]["code"] == "not_found");
}
}  // namespace unit_proto_test_errors
