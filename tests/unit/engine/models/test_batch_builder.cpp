#include "engine/models/batch_builder.h"

#include <doctest/doctest.h>

#include <chrono>
#include <memory>
#include <numeric>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/scheduling/scheduler.h"
#include "tests/unit/engine/scheduling/step_layout.h"

namespace sluice::engine::unit_engine_models_test_batch_builder {
namespace {

std::vector<int32_t> to_vector(std::span<const int32_t> s) { return {s.begin(), s.end()}; }

TEST_CASE("BatchBuilder: kv_slot maps a position through its block table") {
  const std::vector<int32_t> table = {7, 2, 5};
  CHECK(kv_slot(table, 0, 4) == 28);
  CHECK(kv_slot(table, 3, 4) == 31);
  CHECK(kv_slot(table, 4, 4) == 8);   // the second block
  CHECK(kv_slot(table, 11, 4) == 23);
  CHECK_THROWS_AS(BatchBuilder(0), std::invalid_argument);
}

TEST_CASE("BatchBuilder: sequences are contiguous, at the positions after their cached tokens") {
  BatchBuilder builder(4);
  const std::vector<int32_t> a_tokens = {10, 11, 12}, a_table = {7, 2};
  const std::vector<int32_t> b_tokens = {20}, b_table = {5};
  CHECK(builder.add_sequence(a_tokens, 3, a_table) == 0);  // a prefill chunk across a block boundary
  CHECK(builder.add_sequence(b_tokens, 0, b_table) == 1);  // a first token
  const StepBatch batch = builder.batch();
  CHECK(to_vector(batch.token_ids) == std::vector<int32_t>{10, 11, 12, 20});
  CHECK(to_vector(batch.positions) == std::vector<int32_t>{3, 4, 5, 0});
  CHECK(to_vector(batch.kv_slots) == std::vector<int32_t>{31, 8, 9, 20});
  REQUIRE(batch.sequences.size() == 2);
  CHECK(batch.sequences[0].query_begin == 0);
  CHECK(batch.sequences[0].num_queries == 3);
  CHECK(batch.sequences[0].num_cached == 3);
  CHECK(batch.sequences[0].block_table == a_table);
  CHECK(batch.sequences[1].query_begin == 3);
  CHECK(batch.sequences[1].num_queries == 1);
  CHECK(batch.sequences[1].num_cached == 0);
  CHECK(batch.sequences[1].block_table == b_table);
  CHECK(batch.logit_rows.empty());
  CHECK(builder.num_tokens() == 4);
  CHECK(builder.num_sequences() == 2);
}

TEST_CASE("BatchBuilder: logit rows come out in the order asked, as rows of the step") {
  BatchBuilder builder(4);
  const std::vector<int32_t> a_tokens = {10, 11, 12}, b_tokens = {20, 21}, table = {0, 1};
  builder.add_sequence(a_tokens, 0, table);
  builder.add_sequence(b_tokens, 5, table);
  CHECK(builder.add_logit_rows(0, 1, 2) == 0);  // a's tokens 1 and 2 (prompt scoring)
  CHECK(builder.add_last_logit_row(1) == 2);     // b's last token (sampling)
  CHECK(builder.add_last_logit_row(0) == 3);
  CHECK(builder.add_logit_rows(1, 0, 0) == 4);   // nothing asked: nothing added
  CHECK(to_vector(builder.batch().logit_rows) == std::vector<int32_t>{1, 2, 4, 2});
  CHECK(builder.num_logit_rows() == 4);
}

TEST_CASE("BatchBuilder: clear() starts a new step") {
  BatchBuilder builder(4);
  const std::vector<int32_t> tokens = {1, 2, 3}, long_table = {3, 4}, short_table = {1};
  builder.add_sequence(tokens, 2, long_table);
  builder.add_sequence(tokens, 0, long_table);
  builder.add_last_logit_row(1);
  builder.clear();
  const StepBatch empty = builder.batch();
  CHECK(empty.token_ids.empty());
  CHECK(empty.positions.empty());
  CHECK(empty.kv_slots.empty());
  CHECK(empty.sequences.empty());
  CHECK(empty.logit_rows.empty());

  const std::vector<int32_t> next = {30, 31};
  CHECK(builder.add_sequence(next, 0, short_table) == 0);
  const StepBatch batch = builder.batch();
  CHECK(to_vector(batch.token_ids) == next);
  CHECK(to_vector(batch.kv_slots) == std::vector<int32_t>{4, 5});
  REQUIRE(batch.sequences.size() == 1);
  CHECK(batch.sequences[0].query_begin == 0);
  CHECK(batch.sequences[0].num_cached == 0);
  CHECK(batch.sequences[0].block_table == short_table);  // the reused slice's old table is gone
}

// The engine's ModelRunner describes each scheduled chunk (its tokens, start and
// block table) and lets the builder place it; the speech engine reads the
// scheduler's own flat arrays. Both must agree, over chunked prefills that end
// mid-block and decodes.
TEST_CASE("BatchBuilder: a scheduled step described chunk by chunk gives its positions and slots") {
  SchedulerConfig config;
  config.max_num_batched_tokens = 9;
  config.max_num_seqs = 8;
  config.max_waiting = 8;
  config.max_model_len = 64;
  config.kv = {.num_blocks = 32, .block_size = 4, .enable_prefix_caching = false};
  Scheduler scheduler(config);
  const auto params = std::make_shared<SamplingParams>();
  params->max_tokens = 6;
  const Clock::time_point t0 = Clock::time_point(std::chrono::hours(1));
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> prompt(static_cast<size_t>(3 + 4 * i));
    std::iota(prompt.begin(), prompt.end(), 100 * (i + 1));
    const auto seq = std::make_shared<Sequence>("s" + std::to_string(i), std::move(prompt), params,
                                                t0 + std::chrono::milliseconds(i));
    REQUIRE(scheduler.add(seq).ok());
  }
  BatchBuilder builder(4);
  int num_steps = 0;
  for (ScheduledStep step = scheduler.schedule(t0); !step.empty(); step = scheduler.schedule(t0), ++num_steps) {
    builder.clear();
    for (const ScheduledSequence& scheduled : step.seqs) {
      const auto chunk = std::span(step.token_ids).subspan(static_cast<size_t>(scheduled.query_start),
                                                          static_cast<size_t>(scheduled.num_new_tokens));
      builder.add_sequence(chunk, scheduled.start_position, scheduled.block_table);
    }
    const StepBatch batch = builder.batch();
    CHECK(to_vector(batch.token_ids) == step.token_ids);
    CHECK(to_vector(batch.positions) == testing::step_positions(step));
    CHECK(std::vector<int64_t>(batch.kv_slots.begin(), batch.kv_slots.end()) == testing::step_slots(step, 4));
    for (size_t s = 0; s < step.seqs.size(); ++s) CHECK(batch.sequences[s].query_begin == step.seqs[s].query_start);
    std::vector<int32_t> sampled(static_cast<size_t>(step.num_sampling), 7);
    scheduler.update(step, sampled);
  }
  CHECK(num_steps > 4);  // chunked prefills and decodes, not one step
}

}  // namespace
}  // namespace sluice::engine
