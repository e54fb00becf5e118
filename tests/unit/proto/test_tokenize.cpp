#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "proto/tokenize.h"

namespace unit_proto_test_tokenize {

using namespace sluice::proto;
using Json = nlohmann::ordered_json;

namespace {

TokenizeRequest tok_ok(const std::string& body) {
  auto r = parse_tokenize_request(body);
  if (auto* e = std::get_if<ApiError>(&r)) FAIL_CHECK("unexpected error: ", e->message);
  REQUIRE(std::holds_alternative<TokenizeRequest>(r));
  return std::get<TokenizeRequest>(r);
}

std::string tok_err(const std::string& body) {
  auto r = parse_tokenize_request(body);
  REQUIRE(std::holds_alternative<ApiError>(r));
  CHECK(std::get<ApiError>(r).status == 400);
  return std::get<ApiError>(r).param;
}

std::string detok_err(const std::string& body) {
  auto r = parse_detokenize_request(body);
  REQUIRE(std::holds_alternative<ApiError>(r));
  return std::get<ApiError>(r).param;
}

}  // namespace

TEST_CASE("tokenize: prompt form, vLLM defaults") {
  auto r = tok_ok(R"({"model":"m","prompt":"hello"})");
  CHECK(r.model == "m");
  CHECK(r.prompt == "hello");
  CHECK_FALSE(r.is_chat());
  CHECK(r.add_special_tokens);
  CHECK_FALSE(r.return_token_strs);
  r = tok_ok(R"({"prompt":"","add_special_tokens":false,"return_token_strs":true})");
  CHECK_FALSE(r.model.has_value());
  CHECK(r.prompt == "");
  CHECK_FALSE(r.add_special_tokens);
  CHECK(r.return_token_strs);
}

TEST_CASE("tokenize: messages form") {
  auto r = tok_ok(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})");
  CHECK(r.is_chat());
  REQUIRE(r.messages.size() == 1);
  CHECK_FALSE(r.add_special_tokens);  // the template carries them
  CHECK(r.add_generation_prompt);
  r = tok_ok(R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false,"add_special_tokens":true})");
  CHECK_FALSE(r.add_generation_prompt);
  CHECK(r.add_special_tokens);
}

TEST_CASE("tokenize: a chat request's template fields, as routers send them") {
  constexpr const char* kPrefill =
      R"("messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"Sure"}])";
  auto r = tok_ok(std::string("{") + kPrefill + R"(,"continue_final_message":true,"chat_template":null,)" +
                  R"("chat_template_kwargs":{"enable_thinking":false}})");
  CHECK(r.continue_final_message);
  CHECK_FALSE(r.add_generation_prompt);
  CHECK(r.chat_template_kwargs == nlohmann::json{{"enable_thinking", false}});
  CHECK(tok_err(std::string("{") + kPrefill + R"(,"continue_final_message":true,"add_generation_prompt":true})") ==
        "continue_final_message");
  CHECK(tok_err(R"({"messages":[{"role":"user","content":"hi"}],"continue_final_message":true})") == "messages");
  CHECK(tok_err(R"({"messages":[{"role":"user","content":"hi"}],"chat_template":"{{ x }}"})") == "chat_template");
  CHECK(tok_err(R"({"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":{"messages":1}})") ==
        "chat_template_kwargs");
  CHECK(tok_err(R"({"prompt":"a","continue_final_message":false})") == "continue_final_message");
}

TEST_CASE("tokenize: rejected forms name the field") {
  CHECK(tok_err(R"({"model":"m"})") == "prompt");
  CHECK(tok_err(R"({"prompt":"a","messages":[{"role":"user","content":"hi"}]})") == "messages");
  CHECK(tok_err(R"({"prompt":5})") == "prompt");
  CHECK(tok_err(R"({"prompt":"a","add_special_tokens":"yes"})") == "add_special_tokens");
  CHECK(tok_err(R"({"prompt":"a","add_generation_prompt":true})") == "add_generation_prompt");
  CHECK(tok_err(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})") ==
        "messages[0].content[0].type");
  CHECK(tok_err(R"({"prompt":)").empty());
}

TEST_CASE("tokenize and detokenize: unknown keys at any depth are ignored by path, or refused when strict") {
  const ParseOptions strict{.strict_fields = true};
  CHECK(tok_ok(R"({"prompt":"a","bogus":1})").ignored_fields == std::vector<std::string>{"bogus"});
  const std::string nested = R"({"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache":1}]}]})";
  CHECK(tok_ok(nested).ignored_fields == std::vector<std::string>{"messages[0].content[0].cache"});
  for (const auto& [body, param] : {std::pair<std::string, std::string>{R"({"prompt":"a","bogus":1})", "bogus"},
                                    {nested, "messages[0].content[0].cache"}}) {
    auto r = parse_tokenize_request(body, strict);
    REQUIRE(std::holds_alternative<ApiError>(r));
    CHECK(std::get<ApiError>(r).param == param);
  }
  const std::string detok = R"({"tokens":[1],"bogus":1})";
  auto lenient = parse_detokenize_request(detok);
  REQUIRE(std::holds_alternative<DetokenizeRequest>(lenient));
  CHECK(std::get<DetokenizeRequest>(lenient).ignored_fields == std::vector<std::string>{"bogus"});
  auto refused = parse_detokenize_request(detok, strict);
  REQUIRE(std::holds_alternative<ApiError>(refused));
  CHECK(std::get<ApiError>(refused).param == "bogus");
}

TEST_CASE("detokenize: request") {
  auto r = parse_detokenize_request(R"({"model":"m","tokens":[1,2,3]})");
  REQUIRE(std::holds_alternative<DetokenizeRequest>(r));
  CHECK(std::get<DetokenizeRequest>(r).tokens == std::vector<int32_t>{1, 2, 3});
  r = parse_detokenize_request(R"({"tokens":[]})");
  REQUIRE(std::holds_alternative<DetokenizeRequest>(r));
  CHECK(detok_err(R"({"model":"m"})") == "tokens");
  CHECK(detok_err(R"({"tokens":[1,"a"]})") == "tokens");
  CHECK(detok_err(R"({"tokens":[-1]})") == "tokens");
  CHECK(detok_err(R"({"tokens":"1 2"})") == "tokens");
  // A tokenize field sent here is unknown: ignored, or refused when strict.
  auto with_prompt = parse_detokenize_request(R"({"tokens":[1],"prompt":"x"})", {.strict_fields = true});
  REQUIRE(std::holds_alternative<ApiError>(with_prompt));
  CHECK(std::get<ApiError>(with_prompt).param == "prompt");
}

TEST_CASE("tokenize and detokenize responses have vLLM's shapes") {
  auto got = Json::parse(tokenize_response({1, 2}, 2048).dump());
  CHECK(got.dump() == Json::parse(R"({"count":2,"max_model_len":2048,"tokens":[1,2]})").dump());
  std::vector<std::string> strs = {"he", "\xe2\x80"};
  got = Json::parse(tokenize_response({1, 2}, 2048, &strs).dump());
  CHECK(got["token_strs"] == Json::parse(R"(["he","bytes:\\xe2\\x80"])"));
  CHECK(Json::parse(detokenize_response("hello").dump()) == Json::parse(R"({"prompt":"hello"})"));
}
}  // namespace unit_proto_test_tokenize
