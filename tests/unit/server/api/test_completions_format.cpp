// server/api/completions_format: what only /v1/completions does with the fold:
// logprobs as parallel arrays with text offsets, echo (and the echoed prompt's
// scored tokens), best_of ranking, and max_tokens 0 scoring.
#include "server/api/openai/completions_format.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/api/generation/generation_job.h"
#include "tests/unit/server/api/generation_events.h"

namespace sluice::server::unit_server_api_test_completions_format {
namespace {

using engine::FinishReason;
using testing::delta;
using testing::finish;
using testing::make_stream;
using testing::sse_events;
using testing::streamed_texts;
using Json = nlohmann::ordered_json;

GenerationJob completions_job(JobSettings settings, std::vector<EchoedPrompt> prompts, int32_t num_returned = 1) {
  settings.header = {"cmpl-2", 1700000000, "m"};
  return GenerationJob(std::move(settings), std::make_unique<CompletionsFormat>(std::move(prompts), num_returned),
                       testing::piece_of);
}

// Prompt tokens scored by the engine, sent on a delta of choice 0.
engine::ChoiceDelta scored_prompt(std::vector<std::pair<int32_t, float>> entries) {
  engine::ChoiceDelta out;
  for (const auto& [token, logprob] : entries) out.prompt_logprobs.push_back({token, logprob, {}});
  return out;
}

}  // namespace

TEST_CASE("completions format: logprobs of a whole answer, with alternatives and text offsets") {
  GenerationJob job = completions_job({.want_logprobs = true}, {EchoedPrompt{}});
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 2);
  stream->push_delta(delta(0, "ab", {3, 4}, {-0.5f, -1.0f}, {{{3, -0.5f}, {9, -1.5f}}, {}}));
  stream->push_delta(delta(0, "c", {5}, {-2.0f}));
  stream->push_finish(finish(0, FinishReason::length, 3));
  job.fold_waiting(false);
  REQUIRE(job.is_done());
  const Json body = Json::parse(job.whole_body());
  const Json& logprobs = body["choices"][0]["logprobs"];
  CHECK(logprobs["tokens"] == Json::parse(R"(["<3>","<4>","<5>"])"));
  CHECK(logprobs["token_logprobs"] == Json::parse("[-0.5,-1.0,-2.0]"));
  // The chosen token is always among the alternatives.
  CHECK(logprobs["top_logprobs"] == Json::parse(R"([{"<3>":-0.5,"<9>":-1.5},{"<4>":-1.0},{"<5>":-2.0}])"));
  CHECK(logprobs["text_offset"] == Json::parse("[0,3,6]"));  // "<3>" is 3 characters
}

TEST_CASE("completions format: streamed logprobs continue the text offsets; the finish chunk has empty arrays") {
  GenerationJob job = completions_job({.want_logprobs = true}, {EchoedPrompt{}});
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 2);
  stream->push_delta(delta(0, "hé", {3}, {-0.25f}));
  stream->push_delta(delta(0, "", {4}, {-1.0f}));  // a token without text yet: logprobs alone
  stream->push_delta(delta(0, "llo", {5}, {-0.5f}));
  stream->push_finish(finish(0, FinishReason::stop, 3));
  const auto events = sse_events(job.fold_waiting(true));
  REQUIRE(events.size() == 4);
  CHECK(events[0]["choices"][0]["logprobs"]["text_offset"] == Json::parse("[0]"));
  CHECK(events[1]["choices"][0]["text"] == "");
  CHECK(events[1]["choices"][0]["logprobs"]["tokens"] == Json::parse(R"(["<4>"])"));
  CHECK(events[1]["choices"][0]["logprobs"]["text_offset"] == Json::parse("[2]"));  // "hé": 2 characters
  CHECK(events[2]["choices"][0]["logprobs"]["text_offset"] == Json::parse("[2]"));
  CHECK(events[3]["choices"][0]["finish_reason"] == "stop");
  CHECK(events[3]["choices"][0]["logprobs"] ==
        Json::parse(R"({"tokens":[],"token_logprobs":[],"top_logprobs":[],"text_offset":[]})"));
}

TEST_CASE("completions format: echo puts the prompt before the text, whole and streamed") {
  SUBCASE("whole") {
    GenerationJob job = completions_job({}, {EchoedPrompt{"Say:", std::nullopt}, EchoedPrompt{"Tell:", std::nullopt}});
    auto first = make_stream("r-0", 1);
    auto second = make_stream("r-1", 1);
    job.add_part(first, 2);
    job.add_part(second, 2);
    first->push_delta(delta(0, " yes", {1}));
    first->push_finish(finish(0, FinishReason::stop, 1));
    second->push_finish(finish(0, FinishReason::stop, 0));
    job.fold_waiting(false);
    const Json body = Json::parse(job.whole_body());
    CHECK(body["choices"][0]["text"] == "Say: yes");
    CHECK(body["choices"][1]["text"] == "Tell:");
  }
  SUBCASE("streamed: one echo chunk per choice first, then text offsets after the prompt") {
    GenerationJob job = completions_job({.want_logprobs = true}, {EchoedPrompt{"Say:", std::nullopt}}, 2);
    auto stream = make_stream("r-0", 2);
    job.add_part(stream, 2);
    const auto opening = sse_events(job.open_stream());
    CHECK(streamed_texts(opening) == std::vector<std::pair<int, std::string>>{{0, "Say:"}, {1, "Say:"}});
    CHECK(opening[0]["choices"][0]["logprobs"]["tokens"] == Json::array());  // not scored: no prompt entries
    stream->push_delta(delta(1, "!", {7}, {-1.0f}));
    const auto events = sse_events(job.fold_waiting(true));
    REQUIRE(events.size() == 1);
    CHECK(events[0]["choices"][0]["logprobs"]["text_offset"] == Json::parse("[4]"));
    CHECK(job.open_stream().empty());  // sent once
  }
}

TEST_CASE("completions format: a streamed echo with logprobs waits until the whole prompt is scored") {
  // Prompt "Hi you" of 3 tokens: <5> (nothing before it: logprob null), then <6> and <7> as the engine scores them.
  GenerationJob job = completions_job({.want_logprobs = true}, {EchoedPrompt{"Hi you", "<5>"}}, 2);
  auto stream = make_stream("r-0", 2);
  job.add_part(stream, 3);
  CHECK(job.open_stream().empty());
  stream->push_delta(scored_prompt({{6, -1.0f}}));
  CHECK(job.fold_waiting(true).empty());  // 2 of 3 scored
  engine::ChoiceDelta rest = delta(0, "!", {8}, {-0.5f});
  rest.prompt_logprobs.push_back({7, -2.0f, {}});
  stream->push_delta(rest);
  const auto events = sse_events(job.fold_waiting(true));
  REQUIRE(events.size() == 3);
  CHECK(streamed_texts(events) == std::vector<std::pair<int, std::string>>{{0, "Hi you"}, {1, "Hi you"}, {0, "!"}});
  for (int i = 0; i < 2; ++i) {
    const Json& logprobs = events[i]["choices"][0]["logprobs"];
    CHECK(logprobs["tokens"] == Json::parse(R"(["<5>","<6>","<7>"])"));
    CHECK(logprobs["token_logprobs"] == Json::parse("[null,-1.0,-2.0]"));
    CHECK(logprobs["top_logprobs"] == Json::parse(R"([null,{"<6>":-1.0},{"<7>":-2.0}])"));
    CHECK(logprobs["text_offset"] == Json::parse("[0,3,6]"));
  }
  CHECK(events[2]["choices"][0]["logprobs"]["text_offset"] == Json::parse("[6]"));  // after "Hi you"
}

TEST_CASE("completions format: a whole echo with logprobs repeats the prompt's entries in every choice") {
  GenerationJob job = completions_job({.want_logprobs = true}, {EchoedPrompt{"Hi", "<5>"}}, 2);
  auto stream = make_stream("r-0", 2);
  job.add_part(stream, 2);
  engine::ChoiceDelta first = delta(0, "a", {8}, {-0.5f});
  first.prompt_logprobs.push_back({6, -1.0f, {}});
  stream->push_delta(first);
  stream->push_delta(delta(1, "b", {9}, {-0.25f}));
  stream->push_finish(finish(0, FinishReason::stop, 1));
  stream->push_finish(finish(1, FinishReason::stop, 1));
  job.fold_waiting(false);
  const Json body = Json::parse(job.whole_body());
  CHECK(body["choices"][0]["text"] == "Hia");
  CHECK(body["choices"][0]["logprobs"]["tokens"] == Json::parse(R"(["<5>","<6>","<8>"])"));
  CHECK(body["choices"][1]["logprobs"]["tokens"] == Json::parse(R"(["<5>","<6>","<9>"])"));
  CHECK(body["choices"][1]["logprobs"]["token_logprobs"] == Json::parse("[null,-1.0,-0.25]"));
  CHECK(body["choices"][1]["logprobs"]["text_offset"] == Json::parse("[0,3,6]"));
}

TEST_CASE("completions format: max_tokens 0 with echo shows only the scored prompt") {
  GenerationJob job = completions_job({.want_logprobs = true, .score_only = true}, {EchoedPrompt{"Hi", "<5>"}});
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 2);
  engine::ChoiceDelta generated = delta(0, " there", {8}, {-0.5f});  // generated only to finish the request
  generated.prompt_logprobs.push_back({6, -1.0f, {}});
  stream->push_delta(generated);
  stream->push_finish(finish(0, FinishReason::stop, 1));
  job.fold_waiting(false);
  REQUIRE(job.is_done());
  const Json body = Json::parse(job.whole_body());
  CHECK(body["choices"][0]["text"] == "Hi");
  CHECK(body["choices"][0]["finish_reason"] == "length");
  CHECK(body["choices"][0]["logprobs"]["tokens"] == Json::parse(R"(["<5>","<6>"])"));
  CHECK(body["usage"]["completion_tokens"] == 0);
}

TEST_CASE("completions format: best_of returns the n choices of highest cumulative logprob, best first") {
  // best_of 3, n 2, two prompts: 3 generated choices per prompt, 2 returned.
  GenerationJob job = completions_job({}, {EchoedPrompt{}, EchoedPrompt{}}, /*num_returned=*/2);
  auto first = make_stream("r-0", 3);
  auto second = make_stream("r-1", 3);
  job.add_part(first, 1);
  job.add_part(second, 1);
  first->push_delta(delta(0, "low", {1, 2}, {-2.0f, -2.0f}));  // -4
  first->push_delta(delta(1, "high", {3, 4}, {-0.5f, -0.5f}));  // -1
  first->push_delta(delta(2, "mid", {5}, {-2.0f}));             // -2
  second->push_delta(delta(0, "tie-a", {6}, {-1.0f}));
  second->push_delta(delta(1, "tie-b", {7}, {-1.0f}));
  second->push_delta(delta(2, "worst", {8}, {-3.0f}));
  for (int32_t k = 0; k < 3; ++k) {
    first->push_finish(finish(k, FinishReason::length, 1));
    second->push_finish(finish(k, FinishReason::length, 1));
  }
  job.fold_waiting(false);
  REQUIRE(job.is_done());
  const Json body = Json::parse(job.whole_body());
  REQUIRE(body["choices"].size() == 4);
  const std::vector<std::string> texts = {"high", "mid", "tie-a", "tie-b"};  // ties keep their order
  for (size_t i = 0; i < 4; ++i) {
    CHECK(body["choices"][i]["index"] == i);
    CHECK(body["choices"][i]["text"] == texts[i]);
    CHECK(body["choices"][i]["logprobs"].is_null());  // only asked of the engine for the ranking
  }
  CHECK(body["usage"]["completion_tokens"] == 6);  // every generated choice counts
}

}  // namespace sluice::server
