// proto::parse_json_document: the one parse of a request body. Keys keep the client's
// order; a repeated key keeps its first place and takes its last value, in small
// objects (a linear scan) and large ones (the hash index) alike; malformed JSON is
// refused with the byte position; the DOM equals nlohmann's own parse of the text.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "proto/json_document.h"

namespace unit_proto_test_json_document {

using sluice::proto::Json;
using sluice::proto::parse_json_document;

namespace {

Json parsed(const std::string& text) {
  Json out;
  std::string error;
  REQUIRE_MESSAGE(parse_json_document(text, out, error), error);
  return out;
}

// {"k0": 0, "k1": 1, ...}, then the keys in `repeats` again with value -1.
std::string object_text(int num_keys, const std::vector<int>& repeats) {
  std::string text = "{";
  for (int i = 0; i < num_keys; ++i) text += (i ? "," : "") + ("\"k" + std::to_string(i) + "\":" + std::to_string(i));
  for (int i : repeats) text += ",\"k" + std::to_string(i) + "\":-1";
  return text + "}";
}

}  // namespace

TEST_CASE("json document: the client's key order, at every depth") {
  const Json doc = parsed(R"({"z": 1, "a": {"y": [true, null, {"q": 1.5, "b": "s"}], "c": -2}, "m": 18446744073709551615})");
  CHECK(doc.dump() == R"({"z":1,"a":{"y":[true,null,{"q":1.5,"b":"s"}],"c":-2},"m":18446744073709551615})");
  CHECK(doc["m"].is_number_unsigned());
  CHECK(doc["a"]["c"].is_number_integer());
  CHECK(parsed("[]").is_array());
  CHECK(parsed(R"("text")") == "text");
  CHECK(parsed("  {}  ").empty());
}

TEST_CASE("json document: a repeated key keeps its first place and takes the last value") {
  CHECK(parsed(R"({"a": 1, "b": 2, "a": {"x": 3}})").dump() == R"({"a":{"x":3},"b":2})");
  for (int num_keys : {3, 15, 16, 17, 40, 5000}) {  // below, at and past the index threshold
    CAPTURE(num_keys);
    const Json doc = parsed(object_text(num_keys, {0, num_keys - 1, num_keys / 2, 0}));
    REQUIRE(doc.size() == static_cast<size_t>(num_keys));
    CHECK(doc.begin().key() == "k0");
    CHECK(doc["k0"] == -1);
    CHECK(doc["k" + std::to_string(num_keys - 1)] == -1);
    CHECK(doc["k" + std::to_string(num_keys / 2)] == -1);
    if (num_keys > 3) CHECK(doc["k1"] == 1);
    int position = 0;
    for (const auto& [key, value] : doc.items()) CHECK(key == "k" + std::to_string(position++));
  }
}

TEST_CASE("json document: the same DOM as nlohmann's parser") {
  for (const char* text : {R"({"a":[1,2.5,-3,"x\u00e9\n",false,null,{}],"b":{"c":{"d":[[]]}}})",
                           R"({"emoji":"\ud83d\ude00","big":1e300,"neg":-0.0,"deep":[[[[1]]]]})"}) {
    CAPTURE(text);
    CHECK(parsed(text) == Json::parse(text));
  }
}

TEST_CASE("json document: malformed text is refused with where it broke") {
  for (const char* text : {"", "{", R"({"a":1,})", R"({"a" 1})", "[1,2", R"({"a":1}x)", "nul", R"({"a":"\x"})"}) {
    CAPTURE(text);
    Json out = Json::object();
    std::string error;
    CHECK_FALSE(parse_json_document(text, out, error));
    CHECK(error.find("(byte ") != std::string::npos);
    CHECK(out.is_null());
  }
}
}  // namespace unit_proto_test_json_document
