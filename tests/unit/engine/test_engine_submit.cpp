// Engine::submit / submit_all: what is refused before anything is queued (vocabulary,
// limits, context length), and vLLM's stop_token_ids / min_tokens end to end.
#include <doctest/doctest.h>

#include <chrono>
#include <string>

#include "tests/unit/engine/engine_harness.h"

namespace sluice::engine::testing::unit_engine_test_engine_submit {
namespace {

using namespace std::chrono_literals;

TEST_CASE("submit_all validates every request before it queues any") {
  LoadedFixture f = load_engine_fixture("llama");
  Engine engine(*f.model, *f.tokenizer, small_config());  // not started: the inbox keeps what is queued
  std::vector<GenerationRequest> requests;
  requests.push_back(greedy_request("p-0", make_prompt(1, 8), 4));
  requests.push_back(greedy_request("p-1", make_prompt(2, 8), 4));
  requests.push_back(greedy_request("p-2", {1, 2, 100000}, 4));  // outside the vocabulary
  std::vector<std::shared_ptr<RequestStream>> streams;
  SubmitResult result = engine.submit_all(std::move(requests), streams);
  CHECK(result.status == SubmitStatus::rejected);
  CHECK(result.param == "prompt");
  CHECK(streams.empty());
  EngineStats stats = engine.stats();
  CHECK(stats.num_pending == 0);  // the two good ones were not queued (so never aborted)
  CHECK(stats.num_requests_submitted == 0);
  CHECK(stats.num_requests_rejected == 1);

  std::vector<GenerationRequest> good;
  good.push_back(greedy_request("q-0", make_prompt(1, 8), 4));
  good.push_back(greedy_request("q-1", make_prompt(2, 8), 4));
  result = engine.submit_all(std::move(good), streams);
  REQUIRE(result.ok());
  CHECK(streams.size() == 2);
  CHECK(engine.stats().num_pending == 2);
}

TEST_CASE("submit_all: the queue must take every choice at once, or none") {
  LoadedFixture f = load_engine_fixture("llama");
  EngineConfig config = small_config();
  config.max_waiting = 3;
  Engine engine(*f.model, *f.tokenizer, config);
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 2; ++i) {
    requests.push_back(greedy_request("r-" + std::to_string(i), make_prompt(1, 8), 4));
    requests.back().params.n = 2;
  }
  std::vector<std::shared_ptr<RequestStream>> streams;
  CHECK(engine.submit_all(std::move(requests), streams).status == SubmitStatus::queue_full);
  CHECK(engine.stats().num_pending == 0);
}

TEST_CASE("submit_all: one request may queue at most max_waiting_per_request choices") {
  LoadedFixture f = load_engine_fixture("llama");
  EngineConfig config = small_config();
  config.max_waiting = 8;
  config.max_waiting_per_request = 2;
  Engine engine(*f.model, *f.tokenizer, config);  // not started: the inbox keeps what is queued
  auto prompts = [](const std::string& id, int count, int32_t n) {
    std::vector<GenerationRequest> requests;
    for (int i = 0; i < count; ++i) {
      requests.push_back(greedy_request(id + "-" + std::to_string(i), make_prompt(1, 8), 4));
      requests.back().params.n = n;
    }
    return requests;
  };
  std::vector<std::shared_ptr<RequestStream>> streams;
  SubmitResult result = engine.submit_all(prompts("three", 3, 1), streams);
  CHECK(result.status == SubmitStatus::rejected);  // never fits: not a 429 to retry
  CHECK(result.param == "prompt");
  CHECK(result.message.find("at most 2 (max_waiting_per_request)") != std::string::npos);
  result = engine.submit_all(prompts("wide", 1, 3), streams);
  CHECK(result.status == SubmitStatus::rejected);
  CHECK(result.param == "n");
  CHECK(engine.stats().num_pending == 0);
  CHECK(engine.submit_all(prompts("two", 2, 1), streams).ok());
  CHECK(engine.submit_all(prompts("pair", 1, 2), streams).ok());
  CHECK(engine.stats().num_pending == 3);
}

TEST_CASE("logit_bias and stop_token_ids must name tokens of the vocabulary") {
  LoadedFixture f = load_engine_fixture("llama");
  Engine engine(*f.model, *f.tokenizer, small_config());
  const int32_t vocab = f.tokenizer->vocab_size();
  GenerationRequest bias = greedy_request("bias", make_prompt(1, 8), 4);
  bias.params.logit_bias = make_logit_bias({{1, 1.0f}, {vocab, 5.0f}});
  SubmitResult result = engine.submit(std::move(bias));
  CHECK(result.status == SubmitStatus::rejected);
  CHECK(result.param == "logit_bias");
  CHECK(result.message.find(std::to_string(vocab)) != std::string::npos);

  LogitBias big;
  for (int32_t id = 0; id <= static_cast<int32_t>(kMaxLogitBias); ++id) big[id] = 1.0f;
  GenerationRequest many = greedy_request("many", make_prompt(1, 8), 4);
  many.params.logit_bias = make_logit_bias(std::move(big));
  result = engine.submit(std::move(many));
  CHECK(result.param == "logit_bias");
  CHECK(result.message.find("at most 300") != std::string::npos);

  GenerationRequest stops = greedy_request("stops", make_prompt(1, 8), 4);
  stops.stop_token_ids = {vocab + 3};
  CHECK(engine.submit(std::move(stops)).param == "stop_token_ids");

  GenerationRequest fine = greedy_request("fine", make_prompt(1, 8), 4);
  fine.params.logit_bias = make_logit_bias({{0, 1.0f}, {vocab - 1, -1.0f}});
  CHECK(engine.submit(std::move(fine)).ok());
}

TEST_CASE("context-length refusals name the prompt's field and say context_length_exceeded") {
  LoadedFixture f = load_engine_fixture("llama");
  EngineConfig config = small_config();
  config.max_model_len = 64;
  Engine engine(*f.model, *f.tokenizer, config);
  GenerationRequest chat = greedy_request("chat", make_prompt(1, 64), 4);
  chat.prompt_param = "messages";
  SubmitResult result = engine.submit(std::move(chat));
  CHECK(result.param == "messages");
  CHECK(result.code == "context_length_exceeded");
  CHECK(result.message.find("messages") != std::string::npos);

  result = engine.submit(greedy_request("completion", make_prompt(1, 64), 4));
  CHECK(result.param == "prompt");
  CHECK(result.code == "context_length_exceeded");

  result = engine.submit(greedy_request("output", make_prompt(1, 40), 30));
  CHECK(result.param == "max_tokens");
  CHECK(result.code == "context_length_exceeded");

  GenerationRequest min_over_max = greedy_request("min", make_prompt(1, 8), 4);
  min_over_max.params.min_tokens = 5;
  CHECK(engine.submit(std::move(min_over_max)).param == "min_tokens");
}

TEST_CASE("stop_token_ids stop a choice (text cut); min_tokens masks them until enough tokens") {
  LoadedFixture f = load_engine_fixture("llama");
  Engine engine(*f.model, *f.tokenizer, small_config());
  engine.start();
  const std::vector<int32_t> prompt = make_prompt(4, 12);
  auto plain = engine.submit(greedy_request("plain", prompt, 8));
  REQUIRE(plain.ok());
  const ChoiceResult free_run = collect(*plain.stream)[0];
  REQUIRE(free_run.tokens.size() == 8);
  const int32_t first = free_run.tokens[0];

  GenerationRequest stopped = greedy_request("stopped", prompt, 8);
  stopped.stop_token_ids = {first};
  auto s = engine.submit(std::move(stopped));
  REQUIRE(s.ok());
  const ChoiceResult cut = collect(*s.stream)[0];
  CHECK(cut.finish.finish_reason() == "stop");
  CHECK(cut.tokens == std::vector<int32_t>{first});
  CHECK(cut.text.empty());

  GenerationRequest kept = greedy_request("kept", prompt, 8);
  kept.stop_token_ids = {first};
  kept.include_stop_str_in_output = true;
  auto k = engine.submit(std::move(kept));
  REQUIRE(k.ok());
  CHECK(collect(*k.stream)[0].text == f.tokenizer->decode(std::vector<int32_t>{first}, true));

  GenerationRequest delayed = greedy_request("delayed", prompt, 8);
  delayed.stop_token_ids = {first};
  delayed.params.min_tokens = 3;
  auto d = engine.submit(std::move(delayed));
  REQUIRE(d.ok());
  const ChoiceResult late = collect(*d.stream)[0];
  REQUIRE(late.tokens.size() >= 3);
  for (size_t i = 0; i < 3; ++i) CHECK(late.tokens[i] != first);  // masked, never sampled
}

// Every prompt entry a stream delivered, in order.
std::vector<TokenLogprobs> prompt_logprobs_of(RequestStream& stream) {
  std::vector<TokenLogprobs> out;
  const auto until = std::chrono::steady_clock::now() + 60s;
  while (!stream.is_done() && std::chrono::steady_clock::now() < until) {
    stream.wait(50ms);
    std::vector<RequestEvent> events;
    stream.poll(events);
    for (auto& event : events)
      if (auto* d = std::get_if<ChoiceDelta>(&event))
        out.insert(out.end(), d->prompt_logprobs.begin(), d->prompt_logprobs.end());
  }
  return out;
}

TEST_CASE("prompt logprobs score every prompt token after the first, chunked or cached alike") {
  LoadedFixture f = load_engine_fixture("llama");
  EngineConfig config = small_config();
  config.max_num_batched_tokens = 16;  // a 40-token prompt takes three chunks
  Engine engine(*f.model, *f.tokenizer, config);
  engine.start();
  const std::vector<int32_t> head = make_prompt(9, 39);

  // The reference: the distribution after `head`, as sampling sees it.
  GenerationRequest next = greedy_request("next", head, 1);
  next.params.logprobs = 3;
  auto n = engine.submit(std::move(next));
  REQUIRE(n.ok());
  const ChoiceResult after_head = collect(*n.stream)[0];
  REQUIRE(after_head.logprobs.size() == 1);
  const TokenLogprobs& expected = after_head.logprobs[0];

  std::vector<int32_t> prompt = head;
  prompt.push_back(expected.token);
  for (int round = 0; round < 2; ++round) {  // the second finds the prompt in the prefix cache
    GenerationRequest r = greedy_request("scored-" + std::to_string(round), prompt, 1);
    r.params.prompt_logprobs = 3;
    r.params.n = 2;  // choice 1 shares choice 0's prompt; only choice 0 scores it
    auto submitted = engine.submit(std::move(r));
    REQUIRE(submitted.ok());
    const std::vector<TokenLogprobs> scored = prompt_logprobs_of(*submitted.stream);
    REQUIRE(scored.size() == prompt.size() - 1);
    for (size_t j = 0; j < scored.size(); ++j) CHECK(scored[j].token == prompt[j + 1]);
    CHECK(scored.back().logprob == doctest::Approx(expected.logprob).epsilon(1e-5));
    REQUIRE(scored.back().top.size() == 3);
    for (size_t k = 0; k < 3; ++k) {
      CHECK(scored.back().top[k].token == expected.top[k].token);
      CHECK(scored.back().top[k].logprob == doctest::Approx(expected.top[k].logprob).epsilon(1e-5));
    }
    for (const auto& entry : scored) CHECK(entry.logprob <= 0.0f);
  }
}

}  // namespace
}  // namespace sluice::engine::testing
