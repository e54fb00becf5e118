#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstring>

#include "proto/embeddings.h"

namespace unit_proto_test_embeddings {

using namespace sluice::proto;

namespace {

EmbeddingsRequest emb_ok(const std::string& body, bool strict = false) {
  auto r = parse_embeddings_request(body, strict);
  if (auto* e = std::get_if<ApiError>(&r)) FAIL_CHECK("unexpected error: ", e->message);
  REQUIRE(std::holds_alternative<EmbeddingsRequest>(r));
  return std::get<EmbeddingsRequest>(r);
}

std::string emb_err(const std::string& body, bool strict = false) {
  auto r = parse_embeddings_request(body, strict);
  REQUIRE(std::holds_alternative<ApiError>(r));
  CHECK(std::get<ApiError>(r).status == 400);
  return std::get<ApiError>(r).param;
}

// Decodes standard base64 (test helper, independent of the encoder's table walk).
std::string decode_base64(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : 63;
  };
  std::string out;
  for (size_t i = 0; i + 3 < text.size(); i += 4) {
    const uint32_t group = (value(text[i]) << 18) | (value(text[i + 1]) << 12) |
                           (text[i + 2] == '=' ? 0 : value(text[i + 2]) << 6) | (text[i + 3] == '=' ? 0 : value(text[i + 3]));
    out += static_cast<char>(group >> 16);
    if (text[i + 2] != '=') out += static_cast<char>((group >> 8) & 0xff);
    if (text[i + 3] != '=') out += static_cast<char>(group & 0xff);
  }
  return out;
}

}  // namespace

TEST_CASE("embeddings request: the four input shapes") {
  EmbeddingsRequest one = emb_ok(R"({"model":"m","input":"hello"})");
  CHECK(one.model == "m");
  CHECK(one.texts == std::vector<std::string>{"hello"});
  CHECK(one.num_inputs() == 1);
  CHECK_FALSE(one.base64);

  EmbeddingsRequest many = emb_ok(R"({"input":["a","b c"],"encoding_format":"base64","user":"u"})");
  CHECK(many.texts == std::vector<std::string>{"a", "b c"});
  CHECK(many.base64);

  EmbeddingsRequest ids = emb_ok(R"({"input":[1,2,3]})");
  REQUIRE(ids.token_inputs.size() == 1);
  CHECK(ids.token_inputs[0] == std::vector<int32_t>{1, 2, 3});

  EmbeddingsRequest lists = emb_ok(R"({"input":[[1,2],[3]],"encoding_format":"float"})");
  REQUIRE(lists.token_inputs.size() == 2);
  CHECK(lists.token_inputs[1] == std::vector<int32_t>{3});
  CHECK(lists.num_inputs() == 2);
}

TEST_CASE("embeddings request: bad fields name themselves") {
  CHECK(emb_err(R"({"model":"m"})") == "input");
  CHECK(emb_err(R"({"input":""})") == "input");
  CHECK(emb_err(R"({"input":[]})") == "input");
  CHECK(emb_err(R"({"input":["a",""]})") == "input");
  CHECK(emb_err(R"({"input":["a",[1]]})") == "input[1]");
  CHECK(emb_err(R"({"input":[[1],[]]})") == "input");
  CHECK(emb_err(R"({"input":[1,-2]})") == "input");
  CHECK(emb_err(R"({"input":7})") == "input");
  CHECK(emb_err(R"({"input":"a","encoding_format":"int8"})") == "encoding_format");
  CHECK(emb_err(R"({"input":"a","dimensions":0})") == "dimensions");
  CHECK(emb_err(R"({"input":"a","truncate_prompt_tokens":0})") == "truncate_prompt_tokens");
  CHECK(emb_err(R"({"input":"a","truncate_prompt_tokens":-2})") == "truncate_prompt_tokens");
  CHECK(emb_err(R"({"input":"a","whatever":1})", /*strict=*/true) == "whatever");
  CHECK(emb_ok(R"({"input":"a","whatever":1})").ignored_fields == std::vector<std::string>{"whatever"});
  std::string too_many = R"({"input":[)";
  for (size_t i = 0; i <= kMaxEmbeddingInputs; ++i) too_many += (i ? ",\"x\"" : "\"x\"");
  CHECK(emb_err(too_many + "]}") == "input");
}

TEST_CASE("embeddings request: dimensions and truncation are read") {
  EmbeddingsRequest r = emb_ok(R"({"input":"a","dimensions":64,"truncate_prompt_tokens":5,"add_special_tokens":false})");
  CHECK(r.dimensions == 64);
  CHECK(r.truncate_prompt_tokens == 5);
  CHECK_FALSE(r.add_special_tokens);
  CHECK(emb_ok(R"({"input":"a","truncate_prompt_tokens":-1})").truncate_prompt_tokens == -1);
}

TEST_CASE("embeddings: truncation keeps the last tokens") {
  std::vector<int32_t> tokens = {1, 2, 3, 4, 5};
  keep_last_tokens(tokens, 10);
  CHECK(tokens.size() == 5);
  keep_last_tokens(tokens, 2);
  CHECK(tokens == std::vector<int32_t>{4, 5});
}

TEST_CASE("embeddings response: float lists, or base64 of little-endian float32") {
  const std::vector<std::vector<float>> vectors = {{0.5f, -1.25f, 3.0e-8f}, {1.0f, 0.0f, 0.1f}};
  const auto floats = nlohmann::json::parse(embeddings_response("m", vectors, false, 7));
  CHECK(floats["object"] == "list");
  CHECK(floats["model"] == "m");
  CHECK(floats["usage"]["prompt_tokens"] == 7);
  CHECK(floats["usage"]["total_tokens"] == 7);
  REQUIRE(floats["data"].size() == 2);
  CHECK(floats["data"][1]["object"] == "embedding");
  CHECK(floats["data"][1]["index"] == 1);
  CHECK(floats["data"][1]["embedding"][2].get<float>() == 0.1f);

  const auto encoded = nlohmann::json::parse(embeddings_response("m", vectors, true, 7));
  for (size_t i = 0; i < vectors.size(); ++i) {
    const std::string bytes = decode_base64(encoded["data"][i]["embedding"].get<std::string>());
    REQUIRE(bytes.size() == vectors[i].size() * 4);
    for (size_t k = 0; k < vectors[i].size(); ++k) {
      const auto* b = reinterpret_cast<const unsigned char*>(bytes.data() + 4 * k);
      const uint32_t bits = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
      float value = 0;
      std::memcpy(&value, &bits, 4);
      CHECK(value == vectors[i][k]);
    }
  }
  CHECK(float32_base64({1.0f}) == "AACAPw==");  // 00 00 80 3f
  CHECK(float32_base64({}) == "");
}
}  // namespace unit_proto_test_embeddings
