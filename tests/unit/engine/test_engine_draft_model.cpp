// Speculative decoding with a draft model (model_drafter.h) on the fixture models:
// the output is the plain decoder's token for token whatever the draft model is, a
// draft model equal to the target has every draft accepted, and the drafter's own KV
// cache follows rollbacks and evictions (its proposals equal a fresh drafter's).
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/backend_factory.h"
#include "engine/speculative/model_drafter.h"
#include "tests/unit/backends/backend_test_util.h"
#include "tests/unit/engine/speculative_harness.h"

namespace sluice::engine::testing::unit_engine_test_engine_draft_model {
namespace {

TEST_CASE("draft model: greedy output == plain greedy output; the target as its own draft has every draft accepted") {
  LoadedFixture f = load_engine_fixture("llama", "f32");
  const std::vector<GenerationRequest> requests = greedy_set(40);
  const Run plain = run_all(f, small_config(), requests);
  for (const char* variant : {"f32", "q8_0", "q4_0"}) {
    CAPTURE(variant);
    std::unique_ptr<Model> draft = load_draft(f, variant);
    const Run speculative = run_all(f, draft_config(*draft), requests);
    check_same_output(plain, speculative);
    const SpeculationStats& s = speculative.stats.speculation;
    MESSAGE("draft " << std::string(variant) << ": drafts " << s.num_drafts << ", draft tokens " << s.num_draft_tokens
                     << ", accepted " << s.num_accepted_tokens);
    CHECK(s.num_drafts > 0);
    CHECK(s.num_accepted_tokens > 0);
    CHECK(speculative.stats.num_steps < plain.stats.num_steps);
    // Batch invariance: the draft computes each token's logits as the target's
    // verifying row does, so the same weights agree on every greedy token.
    if (std::string(variant) == "f32") CHECK(s.num_accepted_tokens == s.num_draft_tokens);
  }
}

TEST_CASE("draft model on CUDA: greedy output == plain greedy output on CUDA") {
  if (!backends::test::cuda_backend_or_skip("a draft model on CUDA")) return;
  LoadedFixture f = load_engine_fixture_on(backends::make_backend(backends::resolve_backend("cuda:0")), "llama", "f32");
  std::unique_ptr<Model> draft = load_draft(f, "q8_0");  // on the target's CUDA backend
  const std::vector<GenerationRequest> requests = greedy_set(40);
  const Run plain = run_all(f, small_config(), requests);
  const Run speculative = run_all(f, draft_config(*draft), requests);
  // Logprobs within cuBLAS's row-count-dependent sums, as the n-gram CUDA case.
  const double worst = check_same_output(plain, speculative, 1e-4);
  const SpeculationStats& s = speculative.stats.speculation;
  MESSAGE("draft q8_0 on CUDA: accepted " << s.num_accepted_tokens << " of " << s.num_draft_tokens
                                          << "; largest logprob difference " << worst);
  CHECK(s.num_accepted_tokens > 0);
  CHECK(speculative.stats.num_steps < plain.stats.num_steps);
}

TEST_CASE("draft model: seeded sampling, n > 1, stops and the batch-size cut-off stay exact") {
  LoadedFixture f = load_engine_fixture("llama", "f32");
  std::unique_ptr<Model> draft = load_draft(f, "q8_0");
  std::vector<GenerationRequest> requests;
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    GenerationRequest r = greedy_request("s" + std::to_string(seed), make_prompt(seed + 20, 30), 40);
    r.params.temperature = 0.7f;
    r.params.top_k = 20;
    r.params.seed = seed;
    r.params.n = seed == 2 ? 3 : 1;
    r.params.logprobs = 1;
    if (seed == 3) r.params.repetition_penalty = 1.1f;
    if (seed == 4) r.params.max_tokens = 5;
    requests.push_back(std::move(r));
  }
  const Run plain = run_all(f, small_config(), requests);
  const Run speculative = run_all(f, draft_config(*draft), requests);
  check_same_output(plain, speculative);
  CHECK(speculative.stats.speculation.num_accepted_tokens > 0);
  CHECK(speculative.choices[5].tokens.size() == 5);  // seed 4's max_tokens (after seed 2's three choices)
  const Run capped = run_all(f, draft_config(*draft, 4, 2), requests);  // 6 choices decode at once
  check_same_output(plain, capped);
  CHECK(capped.stats.speculation.num_drafts < speculative.stats.speculation.num_drafts);
}

// A decoding sequence with `tokens` (prompt only: the drafter reads tokens()).
SequencePtr sequence(uint64_t id, std::vector<int32_t> tokens) {
  auto seq = std::make_shared<Sequence>("r" + std::to_string(id), std::move(tokens),
                                        std::make_shared<const SamplingParams>());
  seq->set_seq_id(id);
  return seq;
}

std::vector<std::vector<int32_t>> propose(ModelDrafter& drafter, const std::vector<SequencePtr>& seqs, int32_t k) {
  std::vector<std::vector<int32_t>> drafts(seqs.size(), std::vector<int32_t>{-1});
  std::vector<DraftRequest> requests;
  for (size_t i = 0; i < seqs.size(); ++i)
    requests.push_back({.seq = seqs[i].get(), .max_tokens = k, .draft = &drafts[i]});
  drafter.propose(requests);
  return drafts;
}

DraftModelSetup setup(int64_t num_blocks, int64_t max_chunk_tokens = 256) {
  return {.target_vocab_size = 1 << 20, .num_blocks = num_blocks, .block_size = 16,
          .kv_dtype = backends::DType::F32, .max_chunk_tokens = max_chunk_tokens, .max_rows = 4};
}

TEST_CASE("model drafter: after rollbacks, preemption-like rewrites and evictions it proposes what a fresh one does") {
  LoadedFixture f = load_engine_fixture("llama", "f32");
  std::unique_ptr<Model> draft = load_draft(f, "f32");
  // Small chunks, so the long prompts are fed over several passes.
  ModelDrafter drafter(*draft, setup(/*num_blocks=*/12, /*max_chunk_tokens=*/24));
  auto fresh = [&](const std::vector<SequencePtr>& seqs, int32_t k) {
    ModelDrafter reference(*draft, setup(64));
    return propose(reference, seqs, k);
  };
  std::vector<int32_t> a = make_prompt(1, 50);
  std::vector<int32_t> b = make_prompt(2, 37);
  const std::vector<SequencePtr> first = {sequence(1, a), sequence(2, b)};
  const auto drafted = propose(drafter, first, 4);
  CHECK(drafted == fresh(first, 4));
  CHECK(drafted[0].size() == 4);

  // a accepts two drafts and the target's own token; b rejects the first draft.
  a.insert(a.end(), drafted[0].begin(), drafted[0].begin() + 2);
  a.push_back(7);
  b.push_back(drafted[1][0] == 9 ? 10 : 9);
  const std::vector<SequencePtr> second = {sequence(1, a), sequence(2, b)};
  CHECK(propose(drafter, second, 3) == fresh(second, 3));

  // b is rewritten from its middle on (a preempted sequence recomputed differently).
  std::vector<int32_t> rewritten(b.begin(), b.begin() + 20);
  const std::vector<int32_t> tail = make_prompt(3, 10);
  rewritten.insert(rewritten.end(), tail.begin(), tail.end());
  const std::vector<SequencePtr> third = {sequence(2, rewritten)};
  CHECK(propose(drafter, third, 4) == fresh(third, 4));

  // A third sequence needs blocks: 12 blocks of 16 tokens hold two of these, so the
  // least recently drafted (a) is evicted, and still proposes right when it returns.
  const std::vector<SequencePtr> newcomer = {sequence(3, make_prompt(4, 60))};
  CHECK(propose(drafter, newcomer, 4) == fresh(newcomer, 4));
  const std::vector<SequencePtr> back = {sequence(1, a)};
  CHECK(propose(drafter, back, 4) == fresh(back, 4));

  // One sequence longer than the whole pool drafts nothing; the others keep drafting.
  const std::vector<SequencePtr> too_long = {sequence(4, make_prompt(5, 12 * 16)), sequence(1, a)};
  const auto drafts = propose(drafter, too_long, 4);
  CHECK(drafts[0].empty());
  CHECK(drafts[1] == fresh({sequence(1, a)}, 4)[0]);
  CHECK(drafter.num_free_blocks() + (a.size() + 3 + 15) / 16 == 12);
}

}  // namespace
}  // namespace sluice::engine::testing
