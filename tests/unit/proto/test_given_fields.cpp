// The parsers record which defaultable sampling fields a body set, so the server can
// fill the others from the model's generation defaults.
#include <doctest/doctest.h>

#include <variant>

#include "proto/chat.h"
#include "proto/completions.h"

namespace sluice::proto::unit_proto_test_given_fields {
namespace {

TEST_CASE("given fields: only the keys the body sent") {
  auto parsed = parse_completion_request(R"({"model": "m", "prompt": "hi", "temperature": 0.5, "top_k": 3})");
  REQUIRE(std::holds_alternative<CompletionRequest>(parsed));
  const auto& completion = std::get<CompletionRequest>(parsed);
  CHECK(completion.given.temperature);
  CHECK(completion.given.top_k);
  CHECK_FALSE(completion.given.top_p);
  CHECK_FALSE(completion.given.min_p);
  CHECK_FALSE(completion.given.presence_penalty);
  CHECK_FALSE(completion.given.frequency_penalty);
  CHECK_FALSE(completion.given.repetition_penalty);
  CHECK_FALSE(completion.given.max_tokens);
  CHECK(completion.sampling.max_tokens == 16);  // OpenAI's, unless the model's defaults say otherwise

  auto nulled = parse_completion_request(R"({"model": "m", "prompt": "hi", "max_tokens": null})");
  REQUIRE(std::holds_alternative<CompletionRequest>(nulled));
  CHECK(std::get<CompletionRequest>(nulled).given.max_tokens);  // null: to the context, the client's choice

  auto chat = parse_chat_request(
      R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "repetition_penalty": 1.1})");
  REQUIRE(std::holds_alternative<ChatRequest>(chat));
  CHECK(std::get<ChatRequest>(chat).given.repetition_penalty);
  CHECK_FALSE(std::get<ChatRequest>(chat).given.max_tokens);
  CHECK_FALSE(std::get<ChatRequest>(chat).given.temperature);
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    CAPTURE(key);
    auto with = parse_chat_request(std::string(R"({"model": "m", "messages": [{"role": "user", "content": "x"}], ")") +
                                   key + R"(": 5})");
    REQUIRE(std::holds_alternative<ChatRequest>(with));
    CHECK(std::get<ChatRequest>(with).given.max_tokens);
  }
}

}  // namespace
}  // namespace sluice::proto
