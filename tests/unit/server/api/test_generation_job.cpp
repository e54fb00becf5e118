// server/api/generation_job: hand-made engine events, pushed into real
// RequestStreams, folded into /v1/completions bodies and SSE streams: the fold
// itself (text, tokens, usage, finishes, failures, timeouts, several prompts) with
// the completions format. Echo, logprobs and best_of: test_completions_format.cpp;
// chat: test_chat_format.cpp.
#include "server/api/generation/generation_job.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/api/openai/completions_format.h"
#include "tests/unit/server/api/generation_events.h"

namespace sluice::server::unit_server_api_test_generation_job {
namespace {

using engine::FinishReason;
using testing::delta;
using testing::finish;
using testing::make_stream;
using testing::sse_events;
using testing::streamed_texts;
using Json = nlohmann::ordered_json;

const proto::ResponseHeader kHeader{"cmpl-1", 1700000000, "m"};

// A completions job without echo, its parts not added yet.
GenerationJob completions_job(JobSettings settings, size_t num_prompts, int32_t num_returned = 1) {
  settings.header = kHeader;
  return GenerationJob(std::move(settings),
                       std::make_unique<CompletionsFormat>(std::vector<EchoedPrompt>(num_prompts), num_returned),
                       testing::piece_of);
}

}  // namespace

TEST_CASE("generation job: a plain completion folds its deltas into one body") {
  GenerationJob job = completions_job({}, 1);
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, /*num_prompt_tokens=*/3);
  CHECK_FALSE(job.is_done());
  stream->push_delta(delta(0, "Hello", {11}));
  stream->push_delta(delta(0, "", {12}));  // a token held back: no text yet
  stream->push_delta(delta(0, " world", {13}));
  CHECK(job.fold_waiting(/*streaming=*/false).empty());
  CHECK_FALSE(job.is_done());
  stream->push_finish(finish(0, FinishReason::stop, 3, /*num_cached_tokens=*/1));
  CHECK(job.fold_waiting(false).empty());
  REQUIRE(job.is_done());
  CHECK_FALSE(job.has_failed());
  CHECK_FALSE(job.is_timed_out_empty());
  CHECK(job.whole_body() ==
        R"({"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"m","choices":[)"
        R"({"index":0,"text":"Hello world","logprobs":null,"finish_reason":"stop"}],)"
        R"("usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6,"prompt_tokens_details":{"cached_tokens":1}}})");
}

TEST_CASE("generation job: streamed choices interleave in event order, each with its own finish") {
  GenerationJob job = completions_job({}, 1, /*num_returned=*/3);
  auto stream = make_stream("r-0", 3);
  job.add_part(stream, 4);
  CHECK(job.open_stream().empty());  // no echo: nothing before the first token
  stream->push_delta(delta(0, "a", {1}));
  stream->push_delta(delta(2, "x", {2}));
  stream->push_delta(delta(1, "", {3}));  // neither text nor logprobs: no chunk
  stream->push_delta(delta(0, "b", {4}));
  const auto first = sse_events(job.fold_waiting(/*streaming=*/true));
  CHECK(streamed_texts(first) == std::vector<std::pair<int, std::string>>{{0, "a"}, {2, "x"}, {0, "b"}});
  for (const auto& event : first) {
    CHECK(event["id"] == "cmpl-1");
    CHECK(event["object"] == "text_completion");
    CHECK(event["choices"][0]["logprobs"].is_null());
    CHECK(event["choices"][0]["finish_reason"].is_null());
    CHECK_FALSE(event.contains("usage"));  // not asked for
  }
  stream->push_finish(finish(2, FinishReason::length, 1));
  stream->push_delta(delta(1, "y", {5}));
  stream->push_finish(finish(1, FinishReason::stop, 2));
  stream->push_finish(finish(0, FinishReason::stop, 2));
  const auto second = sse_events(job.fold_waiting(true));
  REQUIRE(second.size() == 4);
  CHECK(second[0]["choices"][0]["index"] == 2);
  CHECK(second[0]["choices"][0]["text"] == "");
  CHECK(second[0]["choices"][0]["finish_reason"] == "length");
  CHECK(second[1]["choices"][0]["text"] == "y");
  CHECK(second[2]["choices"][0]["index"] == 1);
  CHECK(second[2]["choices"][0]["finish_reason"] == "stop");
  CHECK(second[3]["choices"][0]["index"] == 0);
  CHECK(second[3]["choices"][0]["finish_reason"] == "stop");
  REQUIRE(job.is_done());
  CHECK(job.close_stream() == "data: [DONE]\n\n");  // no usage chunk unless asked
  // The streamed texts are kept for the tallies too.
  CHECK(job.choices()[0].text == "ab");
  CHECK(job.choices()[1].text == "y");
  CHECK(job.choices()[2].text == "x");
}

TEST_CASE("generation job: include_usage puts usage null in every chunk and the totals in a last chunk") {
  GenerationJob job = completions_job({.include_usage = true}, 2);
  auto first = make_stream("r-0", 1);
  auto second = make_stream("r-1", 1);
  job.add_part(first, 5);
  job.add_part(second, 7);
  first->push_delta(delta(0, "one", {1}));
  second->push_delta(delta(0, "two", {2, 3}));
  first->push_finish(finish(0, FinishReason::stop, 1, /*num_cached_tokens=*/4));
  second->push_finish(finish(0, FinishReason::length, 2, 0));
  const auto events = sse_events(job.fold_waiting(true));
  REQUIRE(events.size() == 4);
  for (const auto& event : events) {
    REQUIRE(event.contains("usage"));
    CHECK(event["usage"].is_null());
  }
  REQUIRE(job.is_done());
  const auto closing = sse_events(job.close_stream());
  REQUIRE(closing.size() == 2);
  CHECK(closing[0]["choices"] == Json::array());
  CHECK(closing[0]["usage"] == Json::parse(R"({"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,)"
                                           R"("prompt_tokens_details":{"cached_tokens":4}})"));
  CHECK(closing[1] == "[DONE]");
}

TEST_CASE("generation job: continuous usage stats carry the usage so far in every chunk") {
  GenerationJob job = completions_job({.continuous_usage = true}, 1);
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 2);
  stream->push_delta(delta(0, "a", {1}));
  stream->push_delta(delta(0, "bc", {2, 3}));
  stream->push_finish(finish(0, FinishReason::stop, 3));
  const auto events = sse_events(job.fold_waiting(true));
  REQUIRE(events.size() == 3);
  CHECK(events[0]["usage"]["completion_tokens"] == 1);
  CHECK(events[1]["usage"]["completion_tokens"] == 3);
  CHECK(events[2]["usage"]["completion_tokens"] == 3);
  CHECK(events[2]["usage"]["prompt_tokens"] == 2);
  CHECK(events[2]["usage"]["total_tokens"] == 5);
  CHECK(job.close_stream() == "data: [DONE]\n\n");  // without include_usage: no usage chunk
}

TEST_CASE("generation job: a choice that fails mid-stream fails the response with an error event") {
  GenerationJob job = completions_job({}, 1, /*num_returned=*/2);
  auto stream = make_stream("r-0", 2);
  job.add_part(stream, 3);
  stream->push_delta(delta(0, "fine", {1}));
  stream->push_delta(delta(1, "so far", {2}));
  const auto before = sse_events(job.fold_waiting(true));
  CHECK(before.size() == 2);
  CHECK_FALSE(job.has_failed());
  stream->push_finish(finish(1, FinishReason::error, 1, 0, "kernel exploded"));
  const auto after = sse_events(job.fold_waiting(true));
  CHECK(after.empty());  // no finish chunk for the failed choice
  REQUIRE(job.has_failed());
  CHECK_FALSE(job.is_done());  // choice 0 still runs: the route cancels it
  const proto::ApiError error = job.failure_error("req-42");
  CHECK(error.status == 500);
  CHECK(error.message.find("req-42") != std::string::npos);
  CHECK(error.message.find("kernel exploded") == std::string::npos);  // the reason is only logged
  const auto events = sse_events(job.error_event(error));
  REQUIRE(events.size() == 1);
  CHECK(events[0]["error"]["message"] == error.message);
  CHECK(events[0]["error"]["type"] == error.type);
}

TEST_CASE("generation job: a failed choice fails a whole answer too") {
  GenerationJob job = completions_job({}, 2);
  auto first = make_stream("r-0", 1);
  auto second = make_stream("r-1", 1);
  job.add_part(first, 1);
  job.add_part(second, 1);
  first->push_finish(finish(0, FinishReason::stop, 0));
  second->push_finish(finish(0, FinishReason::error, 0, 0, "out of memory"));
  job.fold_waiting(false);
  REQUIRE(job.is_done());
  CHECK(job.has_failed());
}

TEST_CASE("generation job: a deadline before any token leaves nothing to answer; after one it is a finish") {
  SUBCASE("every choice timed out empty, one in the queue") {
    GenerationJob job = completions_job({}, 1, /*num_returned=*/2);
    auto stream = make_stream("r-0", 2);
    job.add_part(stream, 3);
    stream->push_finish(finish(0, FinishReason::timeout, 0));
    engine::ChoiceFinish queued = finish(1, FinishReason::timeout, 0);
    queued.queue_timeout = true;
    stream->push_finish(queued);
    job.fold_waiting(false);
    REQUIRE(job.is_done());
    CHECK_FALSE(job.has_failed());
    CHECK(job.is_timed_out_empty());
    CHECK(job.is_queue_timeout());
  }
  SUBCASE("a choice with tokens ends with finish_reason timeout") {
    GenerationJob job = completions_job({}, 1, /*num_returned=*/2);
    auto stream = make_stream("r-0", 2);
    job.add_part(stream, 3);
    stream->push_delta(delta(1, "partial", {9}));
    stream->push_finish(finish(0, FinishReason::timeout, 0));
    stream->push_finish(finish(1, FinishReason::timeout, 1));
    job.fold_waiting(false);
    REQUIRE(job.is_done());
    CHECK_FALSE(job.is_timed_out_empty());
    CHECK_FALSE(job.is_queue_timeout());
    const Json body = Json::parse(job.whole_body());
    CHECK(body["choices"][1]["text"] == "partial");
    CHECK(body["choices"][1]["finish_reason"] == "timeout");
  }
}

TEST_CASE("generation job: several prompts answer in prompt order, n choices each") {
  GenerationJob job = completions_job({}, 2, /*num_returned=*/2);
  auto first = make_stream("r-0", 2);
  auto second = make_stream("r-1", 2);
  job.add_part(first, 4);
  job.add_part(second, 6);
  CHECK(job.parts()[1].first_index == 2);
  // The second prompt's events arrive first: the answer still follows the prompts.
  second->push_delta(delta(1, "D", {4}));
  second->push_delta(delta(0, "C", {3}));
  first->push_delta(delta(0, "A", {1}));
  first->push_delta(delta(1, "B", {2}));
  second->push_finish(finish(0, FinishReason::stop, 1, 2));
  second->push_finish(finish(1, FinishReason::stop, 1, 3));
  job.fold_waiting(false);
  CHECK_FALSE(job.is_done());
  first->push_finish(finish(0, FinishReason::length, 1));
  first->push_finish(finish(1, FinishReason::stop, 1));
  job.fold_waiting(false);
  REQUIRE(job.is_done());
  const Json body = Json::parse(job.whole_body());
  REQUIRE(body["choices"].size() == 4);
  const std::vector<std::string> texts = {"A", "B", "C", "D"};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(body["choices"][i]["index"] == i);
    CHECK(body["choices"][i]["text"] == texts[i]);
  }
  CHECK(body["choices"][0]["finish_reason"] == "length");
  // Prompt tokens of every prompt; cached tokens: the most any choice of a prompt reported.
  CHECK(body["usage"]["prompt_tokens"] == 10);
  CHECK(body["usage"]["completion_tokens"] == 4);
  CHECK(body["usage"]["prompt_tokens_details"]["cached_tokens"] == 3);
}

TEST_CASE("generation job: streamed choices of several prompts take their prompt's indices") {
  GenerationJob job = completions_job({}, 2, /*num_returned=*/2);
  auto first = make_stream("r-0", 2);
  auto second = make_stream("r-1", 2);
  job.add_part(first, 1);
  job.add_part(second, 1);
  first->push_delta(delta(1, "b", {1}));
  second->push_delta(delta(0, "c", {2}));
  second->push_finish(finish(1, FinishReason::stop, 0));
  const auto events = sse_events(job.fold_waiting(true));
  REQUIRE(events.size() == 3);
  CHECK(streamed_texts(events) == std::vector<std::pair<int, std::string>>{{1, "b"}, {2, "c"}, {3, ""}});
  CHECK(events[2]["choices"][0]["finish_reason"] == "stop");
}

TEST_CASE("generation job: events fed directly fold as popped ones do") {
  GenerationJob job = completions_job({}, 1);
  job.add_part(make_stream("r-0", 1), 2);
  engine::RequestEvent text = delta(0, "hi", {7});
  engine::RequestEvent done = finish(0, FinishReason::stop, 1);
  std::string sse = job.fold(0, text, true);
  sse += job.fold(0, done, true);
  const auto events = sse_events(sse);
  CHECK(streamed_texts(events) == std::vector<std::pair<int, std::string>>{{0, "hi"}, {0, ""}});
  CHECK(job.choices()[0].finish_reason == "stop");
  CHECK(job.usage().completion_tokens == 1);
}

}  // namespace sluice::server
