// The scheduler's side of speculative decoding: drafts ride behind a decode token,
// accepted ones commit their KV, rejected ones give their blocks back and never
// reach the prefix cache; the chunked-prefill budget while decoding.
#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "engine/engine.h"
#include "engine/scheduling/scheduler.h"
#include "tests/unit/engine/scheduling/step_layout.h"

namespace sluice::engine::unit_engine_scheduling_test_scheduler_drafts {
namespace {

SchedulerConfig config_of(int32_t num_blocks, int64_t budget = 64) {
  SchedulerConfig config;
  config.max_num_batched_tokens = budget;
  config.max_model_len = 256;
  config.kv = {.num_blocks = num_blocks, .block_size = 4, .enable_prefix_caching = true};
  return config;
}

SequencePtr make_seq(const std::string& id, int32_t num_prompt, int32_t first = 1, int32_t max_tokens = 10) {
  auto params = std::make_shared<SamplingParams>();
  params->max_tokens = max_tokens;
  params->seed = 0;
  std::vector<int32_t> prompt(static_cast<size_t>(num_prompt));
  std::iota(prompt.begin(), prompt.end(), first);
  return std::make_shared<Sequence>(id, std::move(prompt), params);
}

// Prefill, sampling token 100: the sequence decodes from then on.
void prefill(Scheduler& scheduler, const SequencePtr& seq) {
  const ScheduledStep step = scheduler.schedule();
  REQUIRE(step.seqs.size() == 1);
  const int32_t token = 100;
  scheduler.update(step, std::span(&token, 1));
  REQUIRE(seq->is_decoding());
}

TEST_CASE("drafts are computed after the decode token and only accepted ones commit") {
  Scheduler scheduler(config_of(16));
  const SequencePtr seq = make_seq("a", 6);  // 6 prompt tokens, blocks of 4
  REQUIRE(scheduler.add(seq).ok());
  prefill(scheduler, seq);
  const int32_t blocks_before = scheduler.block_pool().num_free_blocks();

  seq->mutable_draft_tokens() = {201, 202, 203, 204};
  const ScheduledStep step = scheduler.schedule();
  REQUIRE(step.seqs.size() == 1);
  const ScheduledSequence& s = step.seqs[0];
  CHECK(s.samples);
  CHECK(s.start_position == 6);
  CHECK(s.num_new_tokens == 5);
  CHECK(s.draft_tokens == std::vector<int32_t>{201, 202, 203, 204});
  CHECK(step.token_ids == std::vector<int32_t>{100, 201, 202, 203, 204});
  CHECK(testing::step_positions(step) == std::vector<int32_t>{6, 7, 8, 9, 10});
  CHECK(scheduler.block_pool().num_free_blocks() == blocks_before - 1);  // positions 8..10: a third block

  // The target confirms 201 and 202, then says 77: tokens 201, 202, 77 are emitted.
  const int32_t first = 201;
  scheduler.update(step, std::span(&first, 1));
  CHECK_FALSE(scheduler.commit_draft(seq, 202));
  CHECK_FALSE(scheduler.commit_draft(seq, 77));
  scheduler.release_rejected_drafts(*seq);
  CHECK(seq->num_computed_tokens() == 9);  // 6 prompt + 100, 201, 202
  CHECK(seq->num_tokens() == 10);
  CHECK(std::vector<int32_t>(seq->output_tokens().begin(), seq->output_tokens().end()) ==
        std::vector<int32_t>{100, 201, 202, 77});
  CHECK(seq->block_table().size() == 3);  // 9 slots: 3 blocks
  CHECK(scheduler.stats().num_generation_tokens == 4);
}

TEST_CASE("rejected drafts give every block back, and the prefix cache never holds them") {
  Scheduler scheduler(config_of(8));
  const SequencePtr seq = make_seq("a", 4);  // one full block
  REQUIRE(scheduler.add(seq).ok());
  prefill(scheduler, seq);
  const int32_t free_before = scheduler.block_pool().num_free_blocks();
  const int32_t cached_before = scheduler.block_pool().num_cached_blocks();

  seq->mutable_draft_tokens() = {301, 302, 303, 304, 305, 306, 307, 308};  // fills blocks 2 and 3
  const ScheduledStep step = scheduler.schedule();
  REQUIRE(step.seqs[0].num_new_tokens == 9);
  CHECK(scheduler.block_pool().num_free_blocks() == free_before - 3);
  const int32_t rejected = 55;  // the very first draft is wrong
  scheduler.update(step, std::span(&rejected, 1));
  scheduler.release_rejected_drafts(*seq);
  CHECK(scheduler.block_pool().num_free_blocks() == free_before - 1);  // block 2 holds token 100's KV
  CHECK(scheduler.block_pool().num_cached_blocks() == cached_before);  // nothing new cached
  CHECK(seq->num_computed_tokens() == 5);

  scheduler.finish(seq, FinishReason::stop);
  CHECK(scheduler.block_pool().num_free_blocks() == 8);
  // A sequence whose tokens are the rejected drafts finds only the prompt block cached.
  std::vector<int32_t> probe = {1, 2, 3, 4, 100, 301, 302, 303, 304, 305};
  CHECK(scheduler.block_pool().find_cached_prefix(probe).num_cached_tokens == 4);
}

TEST_CASE("commit_draft finishes on max_tokens like update") {
  Scheduler scheduler(config_of(16));
  auto params = std::make_shared<SamplingParams>();
  params->max_tokens = 3;
  params->seed = 0;
  const auto seq = std::make_shared<Sequence>("a", std::vector<int32_t>{1, 2, 3}, params);
  REQUIRE(scheduler.add(seq).ok());
  prefill(scheduler, seq);
  seq->mutable_draft_tokens() = {7, 8};
  const ScheduledStep step = scheduler.schedule();
  const int32_t first = 7;
  scheduler.update(step, std::span(&first, 1));
  CHECK(scheduler.commit_draft(seq, 8));  // the third output token: length
  CHECK(seq->finish_reason() == FinishReason::length);
  CHECK(scheduler.num_running() == 0);
  CHECK(scheduler.block_pool().num_free_blocks() == 16);
}

TEST_CASE("drafts give way before anyone is preempted") {
  Scheduler scheduler(config_of(2));  // 8 slots in all
  const SequencePtr seq = make_seq("a", 6, 1, 3);
  REQUIRE(scheduler.add(seq).ok());
  prefill(scheduler, seq);
  seq->mutable_draft_tokens() = {1, 2, 3, 4};  // would need slots up to 10
  const ScheduledStep step = scheduler.schedule();
  REQUIRE(step.seqs.size() == 1);
  CHECK(step.preempted.empty());
  CHECK(step.seqs[0].num_new_tokens == 1);
  CHECK(step.seqs[0].draft_tokens.empty());
}

// A scheduler capping prompt tokens at 8 while anything decodes, and sequence "a"
// decoding in it (its prefill ran alone: no cap).
SequencePtr decoding_under_cap_of_8(Scheduler& scheduler) {
  const SequencePtr a = make_seq("a", 4);
  REQUIRE(scheduler.add(a).ok());
  prefill(scheduler, a);
  return a;
}

SchedulerConfig capped_at_8() {
  SchedulerConfig config = config_of(64, 512);
  config.max_prefill_tokens_while_decoding = 8;
  return config;
}

TEST_CASE("while sequences decode, prompt chunks share max_prefill_tokens_while_decoding") {
  Scheduler scheduler(capped_at_8());
  const SequencePtr a = decoding_under_cap_of_8(scheduler);
  const SequencePtr b = make_seq("b", 30, 50);
  const SequencePtr c = make_seq("c", 30, 90);
  REQUIRE(scheduler.add(b).ok());
  REQUIRE(scheduler.add(c).ok());
  ScheduledStep step = scheduler.schedule();
  REQUIRE(step.seqs.size() == 2);  // a decodes; b takes the 8 prompt tokens; c waits
  CHECK(step.seqs[0].seq == a);
  CHECK(step.seqs[0].num_new_tokens == 1);
  CHECK(step.seqs[1].seq == b);
  CHECK(step.seqs[1].num_new_tokens == 8);
  CHECK(step.num_batched_tokens == 9);

  SchedulerConfig uncapped = config_of(64, 512);
  Scheduler plain(uncapped);
  const SequencePtr a2 = make_seq("a", 4);
  REQUIRE(plain.add(a2).ok());
  prefill(plain, a2);
  REQUIRE(plain.add(make_seq("b", 30, 50)).ok());
  CHECK(plain.schedule().num_batched_tokens == 31);  // the whole prompt at once
}

TEST_CASE("under the prefill cap, a long prompt's chunks leave half of it to prompts arriving behind it") {
  Scheduler scheduler(capped_at_8());
  decoding_under_cap_of_8(scheduler);
  const SequencePtr b = make_seq("b", 100, 50);
  REQUIRE(scheduler.add(b).ok());
  ScheduledStep step = scheduler.schedule();  // nobody else waits: b takes the whole cap
  REQUIRE(step.seqs.size() == 2);
  CHECK(step.seqs[1].num_new_tokens == 8);
  scheduler.update(step, std::vector<int32_t>{7});

  const SequencePtr c = make_seq("c", 3, 90);
  REQUIRE(scheduler.add(c).ok());
  step = scheduler.schedule();
  REQUIRE(step.seqs.size() == 3);  // a decodes, b gets half the cap, c is admitted whole
  CHECK(step.seqs[1].seq == b);
  CHECK(step.seqs[1].num_new_tokens == 4);
  CHECK(step.seqs[2].seq == c);
  CHECK(step.seqs[2].num_new_tokens == 3);
  CHECK(step.seqs[2].samples);
}

TEST_CASE("the prefill cap while decoding: a configured value, else paced from 32 on the CPU and 256 on a GPU") {
  CHECK(prefill_cap_while_decoding(-1, backends::DeviceKind::cpu) == 32);
  CHECK(paces_prefill(-1, backends::DeviceKind::cpu));
  CHECK_FALSE(paces_prefill(-1, backends::DeviceKind::cuda));
  CHECK_FALSE(paces_prefill(64, backends::DeviceKind::cpu));  // a configured cap stays fixed
  CHECK(prefill_cap_while_decoding(-1, backends::DeviceKind::cuda) == 256);
  CHECK(prefill_cap_while_decoding(0, backends::DeviceKind::cpu) == 0);  // no cap
  CHECK(prefill_cap_while_decoding(100, backends::DeviceKind::cuda) == 100);
}

}  // namespace
}  // namespace sluice::engine
