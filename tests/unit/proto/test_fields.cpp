#include <doctest/doctest.h>

#include <string>

#include "proto/fields.h"

namespace unit_proto_test_fields {

using namespace sluice::proto;

namespace {

// {"a":[[...[1]...]]} with `levels` levels in all (the object counts as one).
std::string nested(std::size_t levels) {
  return "{\"a\":" + std::string(levels - 1, '[') + "1" + std::string(levels - 1, ']') + "}";
}

}  // namespace

TEST_CASE("bodies nested up to the limit parse") {
  fields::Json out;
  CHECK_FALSE(fields::parse_object(nested(fields::kMaxJsonDepth), out).has_value());
  CHECK(out.is_object());
}

TEST_CASE("bodies nested past the limit are a 400 before any parsing") {
  fields::Json out;
  auto error = fields::parse_object(nested(fields::kMaxJsonDepth + 1), out);
  REQUIRE(error.has_value());
  CHECK(error->status == 400);
  CHECK(error->message.find("levels deep") != std::string::npos);
  CHECK(error->message.find(std::to_string(fields::kMaxJsonDepth)) != std::string::npos);
  CHECK(out.is_null());  // nothing was built

  // Unclosed: the depth check answers before the parser would build 100k levels.
  error = fields::parse_object(std::string(100000, '['), out);
  REQUIRE(error.has_value());
  CHECK(error->message.find("levels deep") != std::string::npos);
}

TEST_CASE("brackets inside strings do not count as nesting") {
  fields::Json out;
  std::string deep_text(2 * fields::kMaxJsonDepth, '[');
  std::string body = R"({"prompt":")" + deep_text + R"(\"[{","b":"\\"})";
  CHECK_FALSE(fields::parse_object(body, out).has_value());
  CHECK(out["prompt"].get<std::string>() == deep_text + "\"[{");
  CHECK(out["b"].get<std::string>() == "\\");
}
}  // namespace unit_proto_test_fields
