// server/api/chat_format: the fold as /v1/chat/completions answers it: role chunks
// first, content deltas, finish chunks, the usage chunk; whole messages with
// "content" logprobs.
#include "server/api/generation/chat_format.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/api/generation/generation_job.h"
#include "tests/unit/server/api/generation_events.h"

namespace sluice::server::unit_server_api_test_chat_format {
namespace {

using engine::FinishReason;
using testing::delta;
using testing::finish;
using testing::make_stream;
using testing::sse_events;
using Json = nlohmann::ordered_json;

GenerationJob chat_job(JobSettings settings) {
  settings.header = {"chatcmpl-3", 1700000000, "m"};
  return GenerationJob(std::move(settings), std::make_unique<ChatFormat>(), testing::piece_of);
}

}  // namespace

TEST_CASE("chat format: a stream opens with every choice's role, then content and finishes as they come") {
  GenerationJob job = chat_job({.include_usage = true});
  auto stream = make_stream("r-0", 2);
  job.add_part(stream, 9);
  const auto opening = sse_events(job.open_stream());
  REQUIRE(opening.size() == 2);
  for (int i = 0; i < 2; ++i) {
    CHECK(opening[i]["object"] == "chat.completion.chunk");
    CHECK(opening[i]["choices"][0]["index"] == i);
    CHECK(opening[i]["choices"][0]["delta"] == Json::parse(R"({"role":"assistant","content":""})"));
    CHECK(opening[i]["choices"][0]["finish_reason"].is_null());
    CHECK(opening[i]["usage"].is_null());
  }
  stream->push_delta(delta(1, "Blue", {1}));
  stream->push_delta(delta(0, "Red", {2}));
  stream->push_delta(delta(0, "", {3}));  // no text yet: no chunk
  stream->push_finish(finish(0, FinishReason::stop, 2, /*num_cached_tokens=*/8));
  stream->push_delta(delta(1, ".", {4}));
  stream->push_finish(finish(1, FinishReason::length, 2));
  const auto events = sse_events(job.fold_waiting(/*streaming=*/true));
  REQUIRE(events.size() == 5);
  CHECK(events[0]["choices"][0]["index"] == 1);
  CHECK(events[0]["choices"][0]["delta"] == Json::parse(R"({"content":"Blue"})"));
  CHECK(events[0]["choices"][0]["logprobs"].is_null());
  CHECK(events[1]["choices"][0]["delta"] == Json::parse(R"({"content":"Red"})"));
  CHECK(events[2]["choices"][0]["index"] == 0);
  CHECK(events[2]["choices"][0]["delta"] == Json::object());
  CHECK(events[2]["choices"][0]["finish_reason"] == "stop");
  CHECK(events[3]["choices"][0]["delta"] == Json::parse(R"({"content":"."})"));
  CHECK(events[4]["choices"][0]["finish_reason"] == "length");
  for (const auto& event : events) CHECK(event["usage"].is_null());
  REQUIRE(job.is_done());
  const auto closing = sse_events(job.close_stream());
  REQUIRE(closing.size() == 2);
  CHECK(closing[0]["object"] == "chat.completion.chunk");
  CHECK(closing[0]["choices"] == Json::array());
  CHECK(closing[0]["usage"] == Json::parse(R"({"prompt_tokens":9,"completion_tokens":4,"total_tokens":13,)"
                                           R"("prompt_tokens_details":{"cached_tokens":8}})"));
  CHECK(closing[1] == "[DONE]");
}

TEST_CASE("chat format: streamed logprobs ride on the content chunks") {
  GenerationJob job = chat_job({.want_logprobs = true});
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 1);
  stream->push_delta(delta(0, "Hi", {5}, {-0.5f}, {{{5, -0.5f}, {6, -1.0f}}}));
  const auto events = sse_events(job.fold_waiting(true));
  REQUIRE(events.size() == 1);
  const Json& content = events[0]["choices"][0]["logprobs"]["content"];
  REQUIRE(content.size() == 1);
  CHECK(content[0]["token"] == "<5>");
  CHECK(content[0]["logprob"] == -0.5);
  CHECK(content[0]["top_logprobs"].size() == 2);
  CHECK(content[0]["top_logprobs"][1]["token"] == "<6>");
}

TEST_CASE("chat format: a whole answer is one assistant message per choice, with usage") {
  GenerationJob job = chat_job({.want_logprobs = true});
  auto stream = make_stream("r-0", 2);
  job.add_part(stream, 4);
  stream->push_delta(delta(0, "Gre", {1}, {-1.0f}));
  stream->push_delta(delta(1, "Yes", {2}, {-0.25f}));
  stream->push_delta(delta(0, "en", {3}, {-0.5f}));
  stream->push_finish(finish(0, FinishReason::stop, 2));
  stream->push_finish(finish(1, FinishReason::stop, 1));
  CHECK(job.fold_waiting(false).empty());
  REQUIRE(job.is_done());
  const Json body = Json::parse(job.whole_body());
  CHECK(body["id"] == "chatcmpl-3");
  CHECK(body["object"] == "chat.completion");
  REQUIRE(body["choices"].size() == 2);
  CHECK(body["choices"][0]["message"] == Json::parse(R"({"role":"assistant","content":"Green"})"));
  CHECK(body["choices"][0]["finish_reason"] == "stop");
  const Json& content = body["choices"][0]["logprobs"]["content"];
  REQUIRE(content.size() == 2);
  CHECK(content[0]["token"] == "<1>");
  CHECK(content[1]["logprob"] == -0.5);
  CHECK(body["choices"][1]["message"]["content"] == "Yes");
  CHECK(body["usage"]["completion_tokens"] == 3);
  CHECK(body["usage"]["prompt_tokens"] == 4);
}

TEST_CASE("chat format: without logprobs asked, a whole answer says null") {
  GenerationJob job = chat_job({});
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 1);
  stream->push_delta(delta(0, "ok", {1}, {-1.0f}));
  stream->push_finish(finish(0, FinishReason::stop, 1));
  job.fold_waiting(false);
  const Json body = Json::parse(job.whole_body());
  CHECK(body["choices"][0]["logprobs"].is_null());
  CHECK(body["choices"][0]["message"]["content"] == "ok");
}

}  // namespace sluice::server
