#include "engine/scheduling/scheduler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "tests/unit/engine/scheduling/step_layout.h"

namespace sluice::engine::unit_engine_scheduling_test_scheduler {
namespace {

using std::chrono::milliseconds;
const Clock::time_point t0 = Clock::time_point(std::chrono::hours(1));

SchedulerConfig make_config(int64_t budget, int32_t num_blocks, int32_t max_num_seqs = 16,
                            int64_t max_model_len = 256, bool prefix_caching = true) {
  SchedulerConfig config;
  config.max_num_batched_tokens = budget;
  config.max_num_seqs = max_num_seqs;
  config.max_waiting = 64;
  config.max_model_len = max_model_len;
  config.kv = {.num_blocks = num_blocks, .block_size = 4, .enable_prefix_caching = prefix_caching};
  return config;
}

// Prompt tokens first, first + 1, ...
SequencePtr make_seq(const std::string& id, int32_t num_prompt, std::optional<int32_t> max_tokens,
                     int32_t first = 1, Clock::time_point arrival = t0, int32_t priority = 0) {
  auto params = std::make_shared<SamplingParams>();
  params->max_tokens = max_tokens;
  params->seed = 0;
  std::vector<int32_t> prompt(num_prompt);
  std::iota(prompt.begin(), prompt.end(), first);
  auto seq = std::make_shared<Sequence>(id, std::move(prompt), params, arrival);
  seq->set_priority(priority);
  return seq;
}

// A fake model: the next token depends on the tokens so far and nothing else.
int32_t fake_next(const Sequence& seq) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t t : seq.tokens()) h = (h ^ static_cast<uint64_t>(t)) * 1099511628211ull;
  return static_cast<int32_t>(h % 997) + 1000;
}

std::vector<int32_t> sample_all(const ScheduledStep& step) {
  std::vector<int32_t> tokens;
  for (const auto& s : step.seqs) {
    if (s.samples) tokens.push_back(fake_next(*s.seq));
  }
  return tokens;
}

// (request id, tokens) per scheduled sequence, in step order.
std::vector<std::pair<std::string, int64_t>> plan(const ScheduledStep& step) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& s : step.seqs) out.emplace_back(s.seq->request_id(), s.num_new_tokens);
  return out;
}
using Plan = std::vector<std::pair<std::string, int64_t>>;

ScheduledStep step_once(Scheduler& scheduler, Clock::time_point now = t0) {
  ScheduledStep step = scheduler.schedule(now);
  scheduler.update(step, sample_all(step));
  return step;
}

TEST_CASE("Scheduler: budget arithmetic, flat arrays and slot mapping") {
  Scheduler scheduler(make_config(10, 64));
  auto a = make_seq("a", 4, 3, 1, t0);
  auto b = make_seq("b", 5, 3, 101, t0 + milliseconds(1));
  auto c = make_seq("c", 6, 3, 201, t0 + milliseconds(2));
  for (auto& s : {a, b, c}) REQUIRE(scheduler.add(s).ok());

  ScheduledStep s1 = scheduler.schedule(t0);
  CHECK(plan(s1) == Plan{{"a", 4}, {"b", 5}, {"c", 1}});
  CHECK(s1.num_batched_tokens == 10);
  CHECK(s1.num_sampling == 2);
  CHECK(s1.seqs[0].samples);
  CHECK(s1.seqs[1].samples);
  CHECK_FALSE(s1.seqs[2].samples);  // its prompt is not done
  CHECK(s1.seqs[2].query_start == 9);
  CHECK(s1.token_ids == std::vector<int32_t>{1, 2, 3, 4, 101, 102, 103, 104, 105, 201});
  CHECK(testing::step_positions(s1) == std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3, 4, 0});
  // Blocks come out of the fresh pool in id order: a=[0], b=[1,2], c=[3].
  CHECK(testing::step_slots(s1, 4) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 12});
  scheduler.update(s1, sample_all(s1));
  CHECK(a->num_output_tokens() == 1);
  CHECK(c->num_computed_tokens() == 1);

  // Decodes first, then c's remaining 5 prompt tokens.
  ScheduledStep s2 = scheduler.schedule(t0);
  CHECK(plan(s2) == Plan{{"a", 1}, {"b", 1}, {"c", 5}});
  CHECK(testing::step_positions(s2) == std::vector<int32_t>{4, 5, 1, 2, 3, 4, 5});
  CHECK(testing::step_slots(s2, 4) == std::vector<int64_t>{16, 9, 13, 14, 15, 20, 21});  // a +[4], c +[5]
  scheduler.update(s2, sample_all(s2));

  CHECK(plan(step_once(scheduler)) == Plan{{"a", 1}, {"b", 1}, {"c", 1}});  // a, b: third token
  CHECK(a->finish_reason() == FinishReason::length);
  CHECK(b->finish_reason() == FinishReason::length);
  CHECK(a->num_output_tokens() == 3);
  CHECK(scheduler.running() == std::vector<SequencePtr>{c});
  const SchedulerStats stats = scheduler.stats();
  CHECK(stats.num_iteration_tokens == 10 + 7 + 3);
  CHECK(stats.num_generation_tokens == 3 + 3 + 2);
  CHECK(stats.num_prompt_tokens == 4 + 5 + 6);
  CHECK(stats.num_finished[static_cast<size_t>(FinishReason::length)] == 2);
}

TEST_CASE("Scheduler: chunked prefill over several steps") {
  SUBCASE("chunks bounded by the budget") {
    Scheduler scheduler(make_config(8, 64));
    auto a = make_seq("a", 20, 2);
    REQUIRE(scheduler.add(a).ok());
    std::vector<int64_t> starts, sizes;
    std::vector<bool> samples;
    for (int i = 0; i < 4; ++i) {
      const ScheduledStep step = step_once(scheduler);
      REQUIRE(step.seqs.size() == 1);
      starts.push_back(step.seqs[0].start_position);
      sizes.push_back(step.seqs[0].num_new_tokens);
      samples.push_back(step.seqs[0].samples);
    }
    CHECK(starts == std::vector<int64_t>{0, 8, 16, 20});
    CHECK(sizes == std::vector<int64_t>{8, 8, 4, 1});
    CHECK(samples == std::vector<bool>{false, false, true, true});
    CHECK(a->finish_reason() == FinishReason::length);
  }
  SUBCASE("chunks bounded by long_prefill_token_threshold") {
    SchedulerConfig config = make_config(64, 64);
    config.long_prefill_token_threshold = 5;
    Scheduler scheduler(config);
    REQUIRE(scheduler.add(make_seq("a", 20, 2)).ok());
    REQUIRE(scheduler.add(make_seq("b", 3, 2, 100)).ok());
    CHECK(plan(step_once(scheduler)) == Plan{{"a", 5}, {"b", 3}});
    CHECK(plan(step_once(scheduler)) == Plan{{"a", 5}, {"b", 1}});
  }
}

TEST_CASE("Scheduler: decodes first, a long prompt takes the leftover budget") {
  Scheduler scheduler(make_config(8, 64));
  REQUIRE(scheduler.add(make_seq("a", 3, 10)).ok());
  CHECK(plan(step_once(scheduler)) == Plan{{"a", 3}});
  REQUIRE(scheduler.add(make_seq("b", 30, 10, 100, t0 + milliseconds(1))).ok());
  for (int i = 0; i < 3; ++i) CHECK(plan(step_once(scheduler)) == Plan{{"a", 1}, {"b", 7}});
  CHECK(plan(step_once(scheduler)) == Plan{{"a", 1}, {"b", 7}});
  CHECK(plan(step_once(scheduler)) == Plan{{"a", 1}, {"b", 2}});  // 30 = 4 * 7 + 2
}

TEST_CASE("Scheduler: max_num_seqs caps the running set") {
  Scheduler scheduler(make_config(64, 64, 2));
  for (const char* id : {"a", "b", "c"}) REQUIRE(scheduler.add(make_seq(id, 2, 2)).ok());
  CHECK(plan(step_once(scheduler)) == Plan{{"a", 2}, {"b", 2}});
  CHECK(scheduler.num_waiting() == 1);
  CHECK(plan(step_once(scheduler)) == Plan{{"a", 1}, {"b", 1}});  // both finish
  CHECK(plan(step_once(scheduler)) == Plan{{"c", 2}});
}

// Runs until everyone finished; returns each request's output tokens.
std::map<std::string, std::vector<int32_t>> run_to_end(Scheduler& scheduler, const std::vector<SequencePtr>& seqs) {
  for (int i = 0; i < 200 && scheduler.has_unfinished(); ++i) step_once(scheduler);
  REQUIRE_FALSE(scheduler.has_unfinished());
  std::map<std::string, std::vector<int32_t>> out;
  for (const auto& s : seqs) out[s->request_id()].assign(s->output_tokens().begin(), s->output_tokens().end());
  return out;
}

TEST_CASE("Scheduler: out of blocks, the newest is preempted and recomputed later") {
  for (const bool prefix_caching : {false, true}) {
    CAPTURE(prefix_caching);
    // 4 blocks of 4 tokens. Each sequence needs up to 15 KV slots, so both fit
    // alone but not together.
    Scheduler scheduler(make_config(64, 4, 16, 256, prefix_caching));
    auto a = make_seq("a", 7, 9, 1, t0);
    auto b = make_seq("b", 7, 9, 50, t0 + milliseconds(1));
    REQUIRE(scheduler.add(a).ok());
    REQUIRE(scheduler.add(b).ok());
    CHECK(plan(step_once(scheduler)) == Plan{{"a", 7}, {"b", 7}});
    CHECK(plan(step_once(scheduler)) == Plan{{"a", 1}, {"b", 1}});

    // a's position 8 needs a third block: b (newest) goes.
    ScheduledStep s3 = scheduler.schedule(t0);
    CHECK(plan(s3) == Plan{{"a", 1}});
    REQUIRE(s3.preempted.size() == 1);
    CHECK(s3.preempted[0] == b);
    CHECK(b->status() == SequenceStatus::preempted);
    CHECK(b->block_table().empty());
    CHECK(b->num_computed_tokens() == 0);
    CHECK(b->num_preemptions() == 1);
    CHECK(scheduler.stats().num_preemptions == 1);
    CHECK(scheduler.num_waiting() == 1);
    scheduler.update(s3, sample_all(s3));

    // b resumes once a is done, recomputing prompt and outputs (minus cache hits).
    const std::vector<int32_t> b_tokens(b->tokens().begin(), b->tokens().end());
    REQUIRE(b_tokens.size() == 9);
    ScheduledStep resumed;
    for (int i = 0; i < 20 && resumed.empty(); ++i) {
      ScheduledStep step = scheduler.schedule(t0);
      for (const auto& s : step.seqs) {
        if (s.seq == b) resumed = step;
      }
      scheduler.update(step, sample_all(step));
    }
    REQUIRE(resumed.seqs.size() == 1);
    const ScheduledSequence& r = resumed.seqs[0];
    // Without the prefix cache everything is recomputed; with it, whatever of b's
    // blocks a did not evict would be reused, but a needed all four blocks, so its
    // third and fourth overwrote b's two cached ones: a hit here would read K/V
    // that a wrote.
    const int64_t cached = r.start_position;
    CHECK(cached == 0);
    CHECK(scheduler.block_pool().num_prefix_cache_hits() == 0);
    CHECK(a->is_finished());
    CHECK(r.num_new_tokens == 9 - cached);
    CHECK(r.samples);
    CHECK(resumed.token_ids == std::vector<int32_t>(b_tokens.begin() + cached, b_tokens.end()));
    std::vector<int32_t> positions(9 - cached);
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(cached));
    CHECK(testing::step_positions(resumed) == positions);

    // Same outputs as a run with room for both.
    const auto outputs = run_to_end(scheduler, {a, b});
    Scheduler roomy(make_config(64, 64));
    auto a2 = make_seq("a", 7, 9, 1, t0);
    auto b2 = make_seq("b", 7, 9, 50, t0 + milliseconds(1));
    REQUIRE(roomy.add(a2).ok());
    REQUIRE(roomy.add(b2).ok());
    CHECK(run_to_end(roomy, {a2, b2}) == outputs);
    CHECK(roomy.stats().num_preemptions == 0);
    CHECK(scheduler.block_pool().usage() == 0.0);
  }
}

TEST_CASE("Scheduler: the sequence that needs a block may be the one preempted") {
  Scheduler scheduler(make_config(64, 4, 16, 256, false));
  auto a = make_seq("a", 5, 3, 1, t0);
  auto b = make_seq("b", 8, 3, 50, t0 + milliseconds(1));
  REQUIRE(scheduler.add(a).ok());
  REQUIRE(scheduler.add(b).ok());
  step_once(scheduler);  // a: 2 blocks, b: 2 blocks, pool empty
  ScheduledStep s2 = scheduler.schedule(t0);
  CHECK(plan(s2) == Plan{{"a", 1}});  // b at position 8 needed a third block
  CHECK(s2.preempted == std::vector<SequencePtr>{b});
}

TEST_CASE("Scheduler: preemption takes the lowest priority before the latest arrival") {
  Scheduler scheduler(make_config(64, 4, 16, 256, false));
  auto early_low = make_seq("low", 7, 9, 1, t0, 5);
  auto late_high = make_seq("high", 7, 9, 50, t0 + milliseconds(1), 0);
  REQUIRE(scheduler.add(early_low).ok());
  REQUIRE(scheduler.add(late_high).ok());
  CHECK(plan(step_once(scheduler)) == Plan{{"high", 7}, {"low", 7}});
  step_once(scheduler);
  const ScheduledStep step = scheduler.schedule(t0);
  CHECK(step.preempted == std::vector<SequencePtr>{early_low});
}

TEST_CASE("Scheduler: waiting order is priority, then arrival, then add order") {
  Scheduler scheduler(make_config(64, 64, 1));
  REQUIRE(scheduler.add(make_seq("late", 2, 1, 1, t0 + milliseconds(2))).ok());
  REQUIRE(scheduler.add(make_seq("early1", 2, 1, 1, t0 + milliseconds(1))).ok());
  REQUIRE(scheduler.add(make_seq("early2", 2, 1, 1, t0 + milliseconds(1))).ok());
  REQUIRE(scheduler.add(make_seq("urgent", 2, 1, 1, t0 + milliseconds(9), -1)).ok());
  std::vector<std::string> order;
  for (const auto& s : scheduler.waiting()) order.push_back(s->request_id());
  CHECK(order == std::vector<std::string>{"urgent", "early1", "early2", "late"});
  std::vector<std::string> served;
  for (int i = 0; i < 4; ++i) served.push_back(step_once(scheduler).seqs.at(0).seq->request_id());
  CHECK(served == order);
}

TEST_CASE("Scheduler: a full queue answers queue_full; n choices are added all or none") {
  SchedulerConfig config = make_config(64, 64);
  config.max_waiting = 2;
  Scheduler scheduler(config);
  REQUIRE(scheduler.add(make_seq("a", 2, 2)).ok());
  REQUIRE(scheduler.add(make_seq("b", 2, 2)).ok());
  const AddResult full = scheduler.add(make_seq("c", 2, 2));
  CHECK(full.status == AddStatus::queue_full);
  CHECK_FALSE(full.message.empty());
  scheduler.schedule(t0);  // admits a and b
  CHECK(scheduler.add(make_seq("c", 2, 2)).ok());

  auto params = std::make_shared<SamplingParams>();
  params->n = 2;
  params->max_tokens = 2;
  const auto choices = make_choices("d", {1, 2, 3}, params, t0);
  CHECK(scheduler.add(choices).status == AddStatus::queue_full);
  CHECK(scheduler.num_waiting() == 1);
  CHECK(scheduler.stats().num_queue_full == 2);
}

TEST_CASE("Scheduler: a request that can never fit is rejected") {
  // max_model_len 32; the pool holds 4 blocks * 4 = 16 tokens.
  Scheduler scheduler(make_config(64, 4, 16, 32));
  auto too_long = scheduler.add(make_seq("a", 20, 20));
  CHECK(too_long.status == AddStatus::rejected);
  CHECK(too_long.message.find("maximum context length is 32") != std::string::npos);
  CHECK(scheduler.add(make_seq("b", 32, std::nullopt)).status == AddStatus::rejected);
  CHECK(scheduler.add(make_seq("c", 0, 5)).status == AddStatus::rejected);
  CHECK(scheduler.add(make_seq("d", 4, 0)).status == AddStatus::rejected);
  const AddResult too_big = scheduler.add(make_seq("e", 10, 8));  // 17 KV tokens: 5 blocks
  CHECK(too_big.status == AddStatus::rejected);
  CHECK(too_big.message.find("KV cache blocks") != std::string::npos);
  CHECK(scheduler.add(make_seq("f", 10, 7)).ok());  // 16 KV tokens: exactly the pool
  CHECK(scheduler.stats().num_rejected == 5);
  CHECK(scheduler.num_waiting() == 1);
}

TEST_CASE("Scheduler: abort finishes at once and frees blocks at the next schedule") {
  Scheduler scheduler(make_config(64, 64));
  auto a = make_seq("a", 6, 10);
  auto b = make_seq("b", 6, 10, 100);
  REQUIRE(scheduler.add(a).ok());
  REQUIRE(scheduler.add(b).ok());
  step_once(scheduler);
  REQUIRE(scheduler.block_pool().usage() > 0.0);

  CHECK(scheduler.abort("a"));
  CHECK(a->finish_reason() == FinishReason::abort);
  CHECK_FALSE(scheduler.abort("a"));
  CHECK_FALSE(scheduler.abort("nobody"));
  const ScheduledStep s2 = scheduler.schedule(t0);
  CHECK(s2.finished == std::vector<SequencePtr>{a});
  CHECK(a->block_table().empty());
  CHECK(plan(s2) == Plan{{"b", 1}});

  // Aborted between schedule and update: the sampled token is dropped.
  CHECK(scheduler.abort("b"));
  scheduler.update(s2, sample_all(s2));
  CHECK(b->num_output_tokens() == 1);
  const ScheduledStep s3 = scheduler.schedule(t0);
  CHECK(s3.empty());
  CHECK(s3.finished == std::vector<SequencePtr>{b});
  CHECK(scheduler.block_pool().usage() == 0.0);
  CHECK_FALSE(scheduler.has_unfinished());
  CHECK(scheduler.stats().num_finished[static_cast<size_t>(FinishReason::abort)] == 2);
}

TEST_CASE("Scheduler: a prefix cache hit skips computation but the last token is always computed") {
  Scheduler scheduler(make_config(64, 64));
  REQUIRE(scheduler.add(make_seq("a", 8, 1)).ok());
  step_once(scheduler);  // computes [1..8], caches 2 blocks, finishes

  auto same = make_seq("same", 8, 1);
  auto longer = make_seq("longer", 9, 1);
  REQUIRE(scheduler.add(same).ok());
  REQUIRE(scheduler.add(longer).ok());
  const ScheduledStep step = scheduler.schedule(t0);
  REQUIRE(step.seqs.size() == 2);
  CHECK(step.seqs[0].start_position == 4);  // the second block holds the last token: recomputed
  CHECK(step.seqs[0].num_new_tokens == 4);
  CHECK(step.seqs[1].start_position == 8);
  CHECK(step.seqs[1].num_new_tokens == 1);
  CHECK(step.seqs[1].samples);
  CHECK(same->num_cached_tokens() == 4);
  CHECK(longer->num_cached_tokens() == 8);
  const SchedulerStats stats = scheduler.stats();
  CHECK(stats.num_prefix_cache_queries == 8 + 8 + 9);
  CHECK(stats.num_prefix_cache_hits == 4 + 8);
}

TEST_CASE("Scheduler: queue-wait and request deadlines finish with timeout") {
  Scheduler scheduler(make_config(64, 64, 1));
  auto a = make_seq("a", 4, 50);
  a->set_deadline(t0 + milliseconds(20));
  auto b = make_seq("b", 4, 50, 100);
  b->set_queue_deadline(t0 + milliseconds(10));
  REQUIRE(scheduler.add(a).ok());
  REQUIRE(scheduler.add(b).ok());
  step_once(scheduler, t0);
  CHECK(step_once(scheduler, t0 + milliseconds(5)).finished.empty());
  const ScheduledStep s3 = step_once(scheduler, t0 + milliseconds(10));
  CHECK(s3.finished == std::vector<SequencePtr>{b});
  CHECK(b->finish_reason() == FinishReason::timeout);
  CHECK(b->timed_out_in_queue());  // never admitted: the queue deadline
  const ScheduledStep s4 = scheduler.schedule(t0 + milliseconds(20));
  CHECK(s4.finished == std::vector<SequencePtr>{a});
  CHECK(a->finish_reason() == FinishReason::timeout);
  CHECK_FALSE(a->timed_out_in_queue());  // its own deadline, while running
  CHECK(scheduler.block_pool().usage() == 0.0);
  CHECK(scheduler.stats().num_finished[static_cast<size_t>(FinishReason::timeout)] == 2);
}

TEST_CASE("Scheduler: finish() from the caller; stop wins over length on the same token") {
  Scheduler scheduler(make_config(64, 64, 16, 8));
  auto a = make_seq("a", 4, 3);
  auto b = make_seq("b", 4, 1, 100);
  auto c = make_seq("c", 5, std::nullopt, 200);  // max_model_len 8: 3 outputs
  for (auto& s : {a, b, c}) REQUIRE(scheduler.add(s).ok());
  ScheduledStep s1 = scheduler.schedule(t0);
  const auto finished = scheduler.update(s1, sample_all(s1));
  CHECK(finished == std::vector<SequencePtr>{b});
  scheduler.finish(b, FinishReason::stop);  // b's only token was also EOS
  CHECK(b->finish_reason() == FinishReason::stop);
  scheduler.finish(a, FinishReason::stop);
  CHECK(a->block_table().empty());
  CHECK(scheduler.running() == std::vector<SequencePtr>{c});
  step_once(scheduler);
  step_once(scheduler);
  CHECK(c->finish_reason() == FinishReason::length);
  CHECK(c->num_tokens() == 8);
  const SchedulerStats stats = scheduler.stats();
  CHECK(stats.num_finished[static_cast<size_t>(FinishReason::stop)] == 2);
  CHECK(stats.num_finished[static_cast<size_t>(FinishReason::length)] == 1);
}

TEST_CASE("Scheduler: n > 1 choices share the leader's full prompt blocks") {
  Scheduler scheduler(make_config(64, 64));
  auto params = std::make_shared<SamplingParams>();
  params->n = 3;
  params->max_tokens = 4;
  params->seed = 42;
  std::vector<int32_t> prompt(10);
  std::iota(prompt.begin(), prompt.end(), 1);
  const auto choices = make_choices("r", prompt, params, t0);
  REQUIRE(choices.size() == 3);
  REQUIRE(scheduler.add(choices).ok());

  const ScheduledStep s1 = step_once(scheduler);
  CHECK(plan(s1) == Plan{{"r", 10}});  // the leader alone
  CHECK(s1.seqs[0].seq == choices[0]);
  const ScheduledStep s2 = step_once(scheduler);
  CHECK(plan(s2) == Plan{{"r", 1}, {"r", 2}, {"r", 2}});  // 8 tokens shared, the tail recomputed
  const auto& leader_table = choices[0]->block_table();
  const BlockPool& pool = scheduler.block_pool();
  for (int i = 1; i < 3; ++i) {
    const auto& table = choices[i]->block_table();
    CHECK(table[0] == leader_table[0]);
    CHECK(table[1] == leader_table[1]);
    CHECK(table[2] != leader_table[2]);  // the partial block is each choice's own
  }
  CHECK(pool.ref_count(leader_table[0]) == 3);
  CHECK(pool.ref_count(leader_table[2]) == 1);

  // Each choice the scheduler hands out draws from its own stream of the request's
  // seed (the stream of its choice index, untouched so far), and the streams differ.
  std::vector<uint64_t> first_draws;
  for (const ScheduledSequence& scheduled : s2.seqs) {
    const int32_t index = scheduled.seq->choice_index();
    CHECK(scheduled.seq == choices[static_cast<size_t>(index)]);
    Rng expected(42, static_cast<uint64_t>(index));
    Rng copy = scheduled.seq->rng();
    const uint64_t draw = copy.next();
    CHECK(draw == expected.next());
    first_draws.push_back(draw);
  }
  std::sort(first_draws.begin(), first_draws.end());
  CHECK(first_draws.size() == 3);  // the leader's decode and both followers' tails
  CHECK(std::unique(first_draws.begin(), first_draws.end()) == first_draws.end());
}

TEST_CASE("Scheduler: without the prefix cache n > 1 choices start together") {
  Scheduler scheduler(make_config(64, 64, 16, 256, false));
  auto params = std::make_shared<SamplingParams>();
  params->n = 2;
  params->max_tokens = 2;
  REQUIRE(scheduler.add(make_choices("r", {1, 2, 3, 4, 5}, params, t0)).ok());
  CHECK(plan(step_once(scheduler)) == Plan{{"r", 5}, {"r", 5}});
}

TEST_CASE("a sequence that scores its prompt prefills in bounded chunks and skips the prefix cache") {
  Scheduler scheduler(make_config(2048, 512, 16, 1024));
  SequencePtr plain = make_seq("plain", 600, 1);
  REQUIRE(scheduler.add({plain}).ok());
  ScheduledStep step = scheduler.schedule(t0);
  REQUIRE(step.seqs.size() == 1);
  CHECK(step.seqs[0].num_new_tokens == 600);
  (void)scheduler.update(step, sample_all(step));

  auto params = std::make_shared<SamplingParams>();
  params->max_tokens = 1;
  params->prompt_logprobs = 0;
  std::vector<int32_t> prompt(600);
  std::iota(prompt.begin(), prompt.end(), 1);  // the same prompt: cached by now
  auto scored = std::make_shared<Sequence>("scored", prompt, params, t0);
  REQUIRE(scheduler.add({scored}).ok());
  std::vector<int64_t> chunks;
  for (int i = 0; i < 5 && !scored->is_prefill_done(); ++i) {
    step = scheduler.schedule(t0);
    for (const auto& s : step.seqs)
      if (s.seq == scored) chunks.push_back(s.num_new_tokens);
    (void)scheduler.update(step, sample_all(step));
  }
  CHECK(chunks == std::vector<int64_t>{kMaxPromptScoringTokens, kMaxPromptScoringTokens, 600 - 2 * kMaxPromptScoringTokens});
  CHECK(scored->num_cached_tokens() == 0);
}

}  // namespace
}  // namespace sluice::engine
