// Fair sharing of the scheduler's queue (engine/scheduling/fair_order.h): a request of many
// prompts or choices does not hold the queue ahead of a small one, clients and
// their requests take turns, priority still comes first, and preemption takes from
// whoever holds the most.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <vector>

#include "engine/scheduling/fair_order.h"
#include "engine/scheduling/scheduler.h"

namespace sluice::engine::unit_engine_scheduling_test_scheduler_fairness {
namespace {

using std::chrono::milliseconds;
const Clock::time_point t0 = Clock::time_point(std::chrono::hours(1));

SchedulerConfig fair_config(int32_t max_num_seqs, int32_t num_blocks = 64) {
  SchedulerConfig config;
  config.max_num_batched_tokens = 256;
  config.max_num_seqs = max_num_seqs;
  config.max_waiting = 64;
  config.max_model_len = 256;
  config.kv = {.num_blocks = num_blocks, .block_size = 4, .enable_prefix_caching = false};
  return config;
}

// One prompt of an API request: `group` is the request, `client` who sent it (0: nobody known).
SequencePtr prompt_of(const std::string& id, uint64_t group, Clock::time_point arrival, int32_t max_tokens = 1,
                      int32_t first_token = 1, uint64_t client = 0, int32_t priority = 0) {
  auto params = std::make_shared<SamplingParams>();
  params->max_tokens = max_tokens;
  params->seed = 0;
  std::vector<int32_t> prompt(4);
  std::iota(prompt.begin(), prompt.end(), first_token);
  auto seq = std::make_shared<Sequence>(id, std::move(prompt), params, arrival);
  seq->set_fair_group(group);
  seq->set_fair_client(client);
  seq->set_priority(priority);
  return seq;
}

std::vector<std::string> ids(const std::vector<SequencePtr>& seqs) {
  std::vector<std::string> out;
  for (const SequencePtr& seq : seqs) out.push_back(seq->request_id());
  return out;
}

std::vector<std::string> step_ids(const ScheduledStep& step) {
  std::vector<std::string> out;
  for (const ScheduledSequence& s : step.seqs) out.push_back(s.seq->request_id());
  return out;
}

std::vector<int32_t> one_token_each(const ScheduledStep& step) {
  std::vector<int32_t> tokens;
  for (const ScheduledSequence& s : step.seqs)
    if (s.samples) tokens.push_back(7);
  return tokens;
}

ScheduledStep step_once(Scheduler& scheduler) {
  ScheduledStep step = scheduler.schedule(t0);
  scheduler.update(step, one_token_each(step));
  return step;
}

TEST_CASE("fair order: a small request is admitted before the rest of a big one queued ahead") {
  Scheduler scheduler(fair_config(2));
  for (int i = 0; i < 6; ++i)
    REQUIRE(scheduler.add(prompt_of("big-" + std::to_string(i), 1, t0, 8, 10 * i)).ok());
  REQUIRE(scheduler.add(prompt_of("small", 2, t0 + milliseconds(1), 8, 100)).ok());
  // First come first served by sequence would admit big-0 and big-1.
  CHECK(step_ids(scheduler.schedule(t0)) == std::vector<std::string>{"big-0", "small"});
}

TEST_CASE("fair order: a freed slot goes to a newcomer before the next prompt of the request that held it") {
  Scheduler scheduler(fair_config(1));
  for (int i = 0; i < 3; ++i) REQUIRE(scheduler.add(prompt_of("big-" + std::to_string(i), 1, t0, 1, 10 * i)).ok());
  CHECK(step_ids(step_once(scheduler)) == std::vector<std::string>{"big-0"});  // one token: done
  REQUIRE(scheduler.add(prompt_of("small", 2, t0 + milliseconds(1), 1, 100)).ok());
  std::vector<std::string> served;
  for (int i = 0; i < 3; ++i) served.push_back(step_ids(step_once(scheduler)).at(0));
  // Both have nothing running (turn 0): the request served least recently goes first.
  CHECK(served == std::vector<std::string>{"small", "big-1", "big-2"});
  CHECK_FALSE(scheduler.has_unfinished());
}

TEST_CASE("fair order: clients take turns, and so do one client's requests") {
  const uint64_t client_a = 77;
  std::vector<SequencePtr> seqs;
  for (int i = 0; i < 2; ++i) seqs.push_back(prompt_of("a1", 11, t0, 1, 1, client_a));
  for (int i = 0; i < 2; ++i) seqs.push_back(prompt_of("a2", 12, t0 + milliseconds(1), 1, 1, client_a));
  for (int i = 0; i < 2; ++i) seqs.push_back(prompt_of("u", 13, t0 + milliseconds(2)));
  for (size_t i = 0; i < seqs.size(); ++i) seqs[i]->set_seq_id(i + 1);

  std::vector<SequencePtr> order = seqs;
  fair_sort(order);
  CHECK(ids(order) == std::vector<std::string>{"a1", "u", "a2", "u", "a1", "a2"});

  // Client a already runs two sequences: the unknown client's request goes first.
  const std::vector<SequencePtr> running = {prompt_of("a0", 10, t0, 1, 1, client_a),
                                            prompt_of("a0", 10, t0, 1, 1, client_a)};
  order = seqs;
  fair_sort(order, running);
  CHECK(ids(order) == std::vector<std::string>{"u", "u", "a1", "a2", "a1", "a2"});
}

TEST_CASE("fair order: priority still comes first") {
  std::vector<SequencePtr> seqs;
  seqs.push_back(prompt_of("small", 2, t0));
  for (int i = 0; i < 3; ++i) seqs.push_back(prompt_of("urgent", 1, t0 + milliseconds(1), 1, 1, 0, -1));
  for (size_t i = 0; i < seqs.size(); ++i) seqs[i]->set_seq_id(i + 1);
  fair_sort(seqs);
  CHECK(ids(seqs) == std::vector<std::string>{"urgent", "urgent", "urgent", "small"});
}

TEST_CASE("fair order: out of blocks, the request holding the most loses its latest sequence") {
  // 5 blocks of 4 tokens: three 4-token prompts fill three; each then needs a second.
  Scheduler scheduler(fair_config(16, 5));
  auto big0 = prompt_of("big-0", 1, t0, 9, 1);
  auto big1 = prompt_of("big-1", 1, t0 + milliseconds(1), 9, 50);
  auto small = prompt_of("small", 2, t0 + milliseconds(2), 9, 100);
  for (const auto& seq : {big0, big1, small}) REQUIRE(scheduler.add(seq).ok());
  CHECK(step_ids(step_once(scheduler)) == std::vector<std::string>{"big-0", "small", "big-1"});
  const ScheduledStep step = scheduler.schedule(t0);
  // By arrival alone the newcomer would be the one preempted.
  CHECK(step.preempted == std::vector<SequencePtr>{big1});
  std::vector<std::string> kept = step_ids(step);
  std::sort(kept.begin(), kept.end());
  CHECK(kept == std::vector<std::string>{"big-0", "small"});
}

TEST_CASE("fair history forgets requests that left once it grows") {
  FairHistory history;
  std::vector<SequencePtr> gone;
  for (uint64_t g = 1; g <= 100; ++g) gone.push_back(prompt_of("r", g, t0));
  for (const SequencePtr& seq : gone) history.record_admission(*seq);
  CHECK(history.last_group_admission(100) == 100);
  const std::vector<SequencePtr> running = {gone.back()};
  history.prune(running, {});
  CHECK(history.last_group_admission(1) == 0);
  CHECK(history.last_group_admission(100) == 100);
}

}  // namespace
}  // namespace sluice::engine
