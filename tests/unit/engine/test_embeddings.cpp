// Embedding requests: the pooling math, the scheduler's prefill-only sequences, and
// the engine end to end (vectors independent of what shares the step).
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/pooling.h"
#include "engine/scheduling/scheduler.h"
#include "tests/unit/engine/engine_harness.h"

namespace sluice::engine::testing::unit_engine_test_embeddings {
namespace {

using namespace std::chrono_literals;

double norm(const std::vector<float>& x) {
  double s = 0.0;
  for (float v : x) s += static_cast<double>(v) * v;
  return std::sqrt(s);
}

TEST_CASE("pooling: last takes the prompt's last row, mean the average, both L2-normalized") {
  // Three positions of width 2: (1, 0), (0, 2), (3, 4).
  const std::vector<float> rows = {1, 0, 0, 2, 3, 4};
  PooledEmbedding last(Pooling::last, 2);
  last.add(0, rows, 3);
  REQUIRE(last.is_complete(3));
  const std::vector<float> l = last.finish(3);
  CHECK(l[0] == doctest::Approx(0.6));
  CHECK(l[1] == doctest::Approx(0.8));

  PooledEmbedding mean(Pooling::mean, 2);
  mean.add(0, rows, 3);
  const std::vector<float> m = mean.finish(3);  // (4/3, 6/3) normalized
  CHECK(m[0] == doctest::Approx(4.0 / std::sqrt(52.0)));
  CHECK(m[1] == doctest::Approx(6.0 / std::sqrt(52.0)));
  CHECK(norm(m) == doctest::Approx(1.0));
}

TEST_CASE("pooling: chunks and repeated positions fold to the same bits as one pass") {
  std::vector<float> rows(5 * 3);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = std::sin(static_cast<float>(i) * 0.7f) * 3.0f;
  PooledEmbedding whole(Pooling::mean, 3);
  whole.add(0, rows, 5);
  PooledEmbedding chunked(Pooling::mean, 3);
  chunked.add(0, std::span(rows).first(6), 5);
  CHECK_FALSE(chunked.is_complete(5));
  chunked.add(0, std::span(rows).first(9), 5);   // a recompute after preemption: positions 0, 1 again
  chunked.add(3, std::span(rows).subspan(9), 5);
  CHECK(chunked.finish(5) == whole.finish(5));

  PooledEmbedding last(Pooling::last, 3);
  last.add(4, std::span(rows).subspan(12), 5);  // the runner sends the last row only
  std::vector<float> expected(rows.begin() + 12, rows.end());
  l2_normalize(expected);
  CHECK(last.finish(5) == expected);
}

TEST_CASE("pooling: names parse, a zero vector stays zero") {
  CHECK(parse_pooling("last") == Pooling::last);
  CHECK(parse_pooling("mean") == Pooling::mean);
  CHECK_FALSE(parse_pooling("cls").has_value());
  std::vector<float> zero(4, 0.0f);
  l2_normalize(zero);
  CHECK(zero == std::vector<float>(4, 0.0f));
}

TEST_CASE("pooling: the config wins, auto reads the file's pooling_type, else last") {
  CHECK(choose_pooling("mean", 3) == Pooling::mean);
  CHECK(choose_pooling("last", 1) == Pooling::last);
  CHECK(choose_pooling("auto", 1) == Pooling::mean);
  CHECK(choose_pooling("auto", 3) == Pooling::last);
  CHECK(choose_pooling("auto", 2) == Pooling::last);  // cls: not for a decoder LLM
  CHECK(choose_pooling("auto", std::nullopt) == Pooling::last);
}

SequencePtr embedding_seq(const std::string& id, int32_t num_prompt, Pooling pooling) {
  std::vector<int32_t> prompt(static_cast<size_t>(num_prompt));
  std::iota(prompt.begin(), prompt.end(), 1);
  auto seq = std::make_shared<Sequence>(id, std::move(prompt), std::make_shared<SamplingParams>());
  seq->set_embedding(pooling);
  return seq;
}

TEST_CASE("scheduler: an embedding is prefill only, never samples, and frees its blocks uncached") {
  SchedulerConfig config;
  config.max_num_batched_tokens = 8;
  config.max_model_len = 32;
  config.kv = {.num_blocks = 16, .block_size = 4, .enable_prefix_caching = true};
  Scheduler scheduler(config);
  // The whole context is allowed: nothing is generated after it.
  const SequencePtr full = embedding_seq("full", 32, Pooling::last);
  REQUIRE(scheduler.add(full).ok());
  scheduler.finish(full, FinishReason::abort);
  CHECK_FALSE(scheduler.add(embedding_seq("long", 33, Pooling::last)).ok());

  const SequencePtr seq = embedding_seq("e", 20, Pooling::mean);
  REQUIRE(scheduler.add(seq).ok());
  int steps = 0;
  std::vector<SequencePtr> finished;
  while (finished.empty() && steps < 10) {
    const ScheduledStep step = scheduler.schedule();
    REQUIRE(step.seqs.size() == 1);
    CHECK(step.num_sampling == 0);
    CHECK_FALSE(step.seqs[0].samples);
    finished = scheduler.update(step, {});
    ++steps;
  }
  CHECK(steps == 3);  // 8 + 8 + 4 tokens
  REQUIRE(finished.size() == 1);
  CHECK(finished[0] == seq);
  CHECK(seq->finish_reason() == FinishReason::stop);
  CHECK(seq->num_output_tokens() == 0);
  CHECK(scheduler.block_pool().num_free_blocks() == 16);
  CHECK(scheduler.block_pool().num_cached_blocks() == 0);  // never offered to the prefix cache
  CHECK_FALSE(scheduler.has_unfinished());
}

GenerationRequest embedding_request(std::string id, std::vector<int32_t> prompt, Pooling pooling) {
  GenerationRequest r;
  r.request_id = std::move(id);
  r.prompt_tokens = std::move(prompt);
  r.embed = pooling;
  return r;
}

std::vector<float> embed_alone(const std::vector<int32_t>& prompt, Pooling pooling, int64_t step_budget = 256) {
  LoadedFixture f = load_engine_fixture("llama");
  EngineConfig config = small_config();
  config.max_num_batched_tokens = step_budget;
  Engine engine(*f.model, *f.tokenizer, config);
  engine.start();
  auto submitted = engine.submit(embedding_request("alone", prompt, pooling));
  REQUIRE(submitted.ok());
  const ChoiceResult result = collect(*submitted.stream)[0];
  REQUIRE(result.finished);
  CHECK(result.finish.reason == FinishReason::stop);
  CHECK(result.finish.num_prompt_tokens == static_cast<int64_t>(prompt.size()));
  CHECK(result.finish.num_completion_tokens == 0);
  CHECK(result.tokens.empty());
  return result.finish.embedding;
}

TEST_CASE("engine: an embedding sharing steps with generation equals the one computed alone, bit for bit") {
  const std::vector<int32_t> prompt = make_prompt(21, 37);
  for (Pooling pooling : {Pooling::last, Pooling::mean}) {
    CAPTURE(to_string(pooling));
    const std::vector<float> alone = embed_alone(prompt, pooling);
    REQUIRE(alone.size() == 64);
    CHECK(norm(alone) == doctest::Approx(1.0).epsilon(1e-6));

    LoadedFixture f = load_engine_fixture("llama");
    Engine engine(*f.model, *f.tokenizer, small_config());
    engine.start();
    // A generation already decoding, and another whose prompt is prefilled beside it.
    auto running = engine.submit(greedy_request("gen", make_prompt(5, 11), 120));
    REQUIRE(running.ok());
    std::vector<RequestEvent> events;
    while (events.empty() && !running.stream->is_done()) {
      running.stream->wait(50ms);
      running.stream->poll(events);
    }
    auto fresh = engine.submit(greedy_request("gen2", make_prompt(6, 23), 8));
    auto embedded = engine.submit(embedding_request("emb", prompt, pooling));
    REQUIRE(fresh.ok());
    REQUIRE(embedded.ok());
    const ChoiceResult shared = collect(*embedded.stream)[0];
    REQUIRE(shared.finished);
    CHECK(shared.finish.reason == FinishReason::stop);
    CHECK(shared.finish.embedding == alone);
    collect(*fresh.stream);
    collect(*running.stream);
    CHECK(wait_idle(engine));  // every block freed

    // Its blocks were never offered to the prefix cache: the same prompt finds nothing.
    auto again = engine.submit(greedy_request("after", prompt, 1));
    REQUIRE(again.ok());
    CHECK(collect(*again.stream)[0].finish.num_cached_tokens == 0);
  }
}

TEST_CASE("engine: a mean-pooled input chunked over steps equals one pass") {
  const std::vector<int32_t> prompt = make_prompt(33, 40);
  CHECK(embed_alone(prompt, Pooling::mean, 16) == embed_alone(prompt, Pooling::mean, 256));
  CHECK(embed_alone(prompt, Pooling::last, 16) == embed_alone(prompt, Pooling::last, 256));
}

}  // namespace
}  // namespace sluice::engine::testing
