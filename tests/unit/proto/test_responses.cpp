#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "proto/responses.h"
#include "proto/sse.h"

namespace unit_proto_test_responses {

using namespace sluice::proto;
using Json = nlohmann::ordered_json;

namespace {

const ResponseHeader kCmpl{"cmpl-1", 1700000000, "smol"};
const ResponseHeader kChat{"chatcmpl-1", 1700000000, "smol"};

// Parses back what a client would read, keeping field order for the comparison.
Json wire(const Json& j) { return Json::parse(dump_json(j)); }

std::vector<std::string> keys(const Json& j) {
  std::vector<std::string> out;
  for (const auto& [k, v] : j.items()) out.push_back(k);
  return out;
}

}  // namespace

TEST_CASE("responses: ids, time and token text") {
  auto a = new_completion_id(), b = new_completion_id();
  CHECK(a.rfind("cmpl-", 0) == 0);
  CHECK(a.size() == 5 + 32);
  CHECK(a != b);
  CHECK(new_chat_completion_id().rfind("chatcmpl-", 0) == 0);
  CHECK(unix_now() > 1600000000);
  CHECK(token_text("hello") == "hello");
  CHECK(token_text("\xc3\xa9") == "\xc3\xa9");
  CHECK(token_text("\xe2\x80") == "bytes:\\xe2\\x80");
  CHECK(token_text("\xc0\x80") == "bytes:\\xc0\\x80");  // overlong
  CHECK(num_chars("h\xc3\xa9") == 2);
  CHECK(num_chars("\xe2\x80") == 1);
  CHECK(num_chars("\x9c") == 0);
}

TEST_CASE("responses: completion object has exactly the OpenAI shape") {
  CompletionChoice choice{0, "Hello", std::nullopt, 0, "length"};
  auto got = wire(completion_object(kCmpl, {choice}, Usage{5, 3, 2}));
  auto expected = Json::parse(R"({
    "id": "cmpl-1", "object": "text_completion", "created": 1700000000, "model": "smol",
    "choices": [{"index": 0, "text": "Hello", "logprobs": null, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
              "prompt_tokens_details": {"cached_tokens": 2}}})");
  CHECK(got == expected);
  CHECK(got.dump() == expected.dump());  // same field order
}

TEST_CASE("responses: completion logprobs in the legacy format, echo's first token null") {
  std::vector<TokenLogprob> lps = {
      {"The", std::nullopt, {}},
      {" cat", -0.5f, {{" cat", -0.5f}, {" dog", -1.25f}}},
      {"\xc3\xa9", -std::numeric_limits<float>::infinity(), {{"\xc3\xa9", -1.0f}}},
  };
  CompletionChoice choice{1, "The cat\xc3\xa9", lps, 0, "stop"};
  auto got = wire(completion_object(kCmpl, {choice}, Usage{}));
  auto expected = Json::parse(R"({
    "tokens": ["The", " cat", "é"],
    "token_logprobs": [null, -0.5, -9999.0],
    "top_logprobs": [null, {" cat": -0.5, " dog": -1.25}, {"é": -1.0}],
    "text_offset": [0, 3, 7]})");
  CHECK(got["choices"][0]["logprobs"] == expected);
  CHECK(got["choices"][0]["index"] == 1);

  // Streaming continues the offsets of the text already sent.
  auto more = completion_logprobs({{"!", -0.1f, {}}}, 8);
  CHECK(wire(more)["text_offset"] == Json::parse("[8]"));
  // "logprobs": 0 shows the chosen token itself, not {}.
  CHECK(wire(more)["top_logprobs"][0] == Json{{"!", wire(more)["token_logprobs"][0]}});
}

TEST_CASE("responses: a chosen token outside the top alternatives joins them (logprobs + 1 entries)") {
  auto got = wire(completion_logprobs({{" z", -3.0f, {{" a", -0.5f}, {" b", -1.0f}}}}, 0));
  CHECK(got["top_logprobs"] == Json::parse(R"([{" a": -0.5, " b": -1.0, " z": -3.0}])"));
}

TEST_CASE("responses: completion stream chunks and the usage chunk") {
  CompletionChoice delta{0, " wor", std::nullopt, 0, std::nullopt};
  auto chunk = wire(completion_chunk(kCmpl, delta, false));
  CHECK(chunk == Json::parse(R"({"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"smol",
    "choices":[{"index":0,"text":" wor","logprobs":null,"finish_reason":null}]})"));
  CHECK_FALSE(chunk.contains("usage"));

  auto with_usage = wire(completion_chunk(kCmpl, delta, true));
  CHECK(with_usage.contains("usage"));
  CHECK(with_usage["usage"].is_null());

  auto last = wire(completion_usage_chunk(kCmpl, Usage{4, 6, 0}));
  CHECK(last == Json::parse(R"({"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"smol",
    "choices":[],"usage":{"prompt_tokens":4,"completion_tokens":6,"total_tokens":10,
    "prompt_tokens_details":{"cached_tokens":0}}})"));
}

TEST_CASE("responses: chat completion object") {
  ChatChoice choice{0, "Hi there", std::nullopt, "stop"};
  auto got = wire(chat_completion_object(kChat, {choice}, Usage{9, 2, 0}));
  auto expected = Json::parse(R"({
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "smol",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi there"},
                 "logprobs": null, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11,
              "prompt_tokens_details": {"cached_tokens": 0}}})");
  CHECK(got.dump() == expected.dump());
}

TEST_CASE("responses: chat logprobs carry bytes and top alternatives") {
  std::vector<TokenLogprob> lps = {{"Hi", -0.25f, {{"Hi", -0.25f}, {"Hey", -2.0f}}},
                                   {"\xe2\x80", -1.5f, {}}};
  ChatChoice choice{0, "Hi", lps, "length"};
  auto got = wire(chat_completion_object(kChat, {choice}, Usage{}))["choices"][0]["logprobs"];
  auto expected = Json::parse(R"({"content": [
    {"token": "Hi", "logprob": -0.25, "bytes": [72, 105],
     "top_logprobs": [{"token": "Hi", "logprob": -0.25, "bytes": [72, 105]},
                      {"token": "Hey", "logprob": -2.0, "bytes": [72, 101, 121]}]},
    {"token": "bytes:\\xe2\\x80", "logprob": -1.5, "bytes": [226, 128], "top_logprobs": []}]})");
  CHECK(got.dump() == expected.dump());
}

TEST_CASE("responses: chat stream chunks in order") {
  auto role = wire(chat_role_chunk(kChat, 0, false));
  CHECK(role.dump() == Json::parse(R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,
    "model":"smol","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,
    "finish_reason":null}]})").dump());

  auto content = wire(chat_content_chunk(kChat, 1, "Hel", nullptr, false));
  CHECK(content["choices"][0].dump() ==
        Json::parse(R"({"index":1,"delta":{"content":"Hel"},"logprobs":null,"finish_reason":null})").dump());

  std::vector<TokenLogprob> lps = {{"Hel", -0.5f, {}}};
  auto with_lp = wire(chat_content_chunk(kChat, 0, "Hel", &lps, true));
  CHECK(with_lp["choices"][0]["logprobs"]["content"][0]["token"] == "Hel");
  CHECK(with_lp["usage"].is_null());
  CHECK(keys(with_lp) == std::vector<std::string>{"id", "object", "created", "model", "choices", "usage"});

  auto finish = wire(chat_finish_chunk(kChat, 0, "stop", false));
  CHECK(finish["choices"][0].dump() ==
        Json::parse(R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"})").dump());

  auto usage = wire(chat_usage_chunk(kChat, Usage{3, 4, 1}));
  CHECK(usage.dump() == Json::parse(R"({"id":"chatcmpl-1","object":"chat.completion.chunk",
    "created":1700000000,"model":"smol","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,
    "total_tokens":7,"prompt_tokens_details":{"cached_tokens":1}}})").dump());
}

TEST_CASE("sse: framing of events, [DONE] and errors") {
  CHECK(sse_event(Json{{"a", 1}}) == "data: {\"a\":1}\n\n");
  CHECK(sse_event(Json{{"text", "two\nlines"}}) == "data: {\"text\":\"two\\nlines\"}\n\n");
  CHECK(sse_done() == "data: [DONE]\n\n");
  auto err = sse_error(invalid_request("bad", "stop"));
  REQUIRE(err.rfind("data: ", 0) == 0);
  REQUIRE(err.size() > 8);
  CHECK(err.substr(err.size() - 2) == "\n\n");
  auto body = Json::parse(err.substr(6, err.size() - 8));
  CHECK(body == Json::parse(
                    R"({"error":{"message":"bad","type":"invalid_request_error","param":"stop","code":null}})"));
  // Invalid UTF-8 in a delta is replaced, never thrown on.
  std::string framed;
  CHECK_NOTHROW(framed = sse_event(Json{{"text", "\xff"}}));
  CHECK(framed.find("\xef\xbf\xbd") != std::string::npos);
}
}  // namespace unit_proto_test_responses
