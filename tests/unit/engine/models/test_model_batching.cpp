// Batch invariance of Model::forward on the CPU backend: a sequence's logits are
// bit-identical however its tokens are split into steps and whatever shares the
// step with it, and whichever rows ask for logits.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/unit/engine/models/model_fixture.h"

namespace sluice::engine::testing::unit_engine_models_test_model_batching {
namespace {

std::vector<float> rows(const std::vector<float>& logits, size_t begin, size_t count, int64_t vocab) {
  const auto v = static_cast<size_t>(vocab);
  return {logits.begin() + static_cast<ptrdiff_t>(begin * v),
          logits.begin() + static_cast<ptrdiff_t>((begin + count) * v)};
}

TEST_CASE("prefill in one step, in chunks and token by token give identical logits") {
  for (const std::string& name : kFixtureNames) {
    CAPTURE(name);
    const ModelFixture fixture = load_fixture(name);
    ModelRunner runner(open_fixture_weights(fixture, "q8_0"));
    const auto& tokens = fixture.sequences.back().tokens;  // 40: crosses blocks and Gemma's window
    const std::vector<float> whole = runner.run(tokens, tokens.size(), 0);
    for (size_t chunk : {1, 3, 16}) {
      CAPTURE(chunk);
      CHECK(runner.run(tokens, chunk, 1) == whole);
    }
  }
}

TEST_CASE("sequences sharing a step get the same logits as alone") {
  for (const std::string& name : kFixtureNames) {
    CAPTURE(name);
    const ModelFixture fixture = load_fixture(name);
    ModelRunner runner(open_fixture_weights(fixture, "f32"));
    const int64_t vocab = fixture.vocab_size;
    const auto& a = fixture.sequences[2].tokens;  // 40 tokens
    const auto& b = fixture.sequences[1].tokens;  // 16 tokens
    const std::vector<float> a_alone = runner.run(a, a.size(), 0);
    const std::vector<float> b_alone = runner.run(b, b.size(), 1);

    // Two whole prompts in one step.
    const auto both = runner.step({a, b}, {0, 0}, {2, 3});
    CHECK(rows(both, 0, a.size(), vocab) == a_alone);
    CHECK(rows(both, a.size(), b.size(), vocab) == b_alone);
    {
      // a: first 30 tokens alone, then its last 10 with b's first token and c's
      // (= a's prefix again) next token.
      const std::vector<int32_t> a_head(a.begin(), a.begin() + 30), a_tail(a.begin() + 30, a.end());
      runner.run(a_head, a_head.size(), 2);
      runner.run({a.begin(), a.begin() + 7}, 7, 3);
      const auto mixed = runner.step({{b[0]}, a_tail, {a[7]}}, {0, 30, 7}, {0, 2, 3});
      CHECK(rows(mixed, 0, 1, vocab) == rows(b_alone, 0, 1, vocab));
      CHECK(rows(mixed, 1, 10, vocab) == rows(a_alone, 30, 10, vocab));
      CHECK(rows(mixed, 11, 1, vocab) == rows(a_alone, 7, 1, vocab));
    }
    {
      // Logits for scattered rows equal those rows of the full step.
      const std::vector<int32_t> picked = {55, 3, 39, 40, 0};
      const auto some = runner.step({a, b}, {0, 0}, {2, 3}, picked);
      for (size_t i = 0; i < picked.size(); ++i)
        CHECK(rows(some, i, 1, vocab) == rows(both, static_cast<size_t>(picked[i]), 1, vocab));
      // The last row of each sequence, contiguous or not.
      const auto last = runner.step({a, b}, {0, 0}, {2, 3}, {39, 55});
      CHECK(rows(last, 0, 1, vocab) == rows(a_alone, 39, 1, vocab));
      CHECK(rows(last, 1, 1, vocab) == rows(b_alone, 15, 1, vocab));
    }
  }
}

TEST_CASE("an F16 KV cache stays close to the F32 one") {
  const ModelFixture fixture = load_fixture("qwen3");
  ModelRunner f32(open_fixture_weights(fixture, "f32"), 2, backends::DType::F32);
  ModelRunner f16(open_fixture_weights(fixture, "f32"), 2, backends::DType::F16);
  const auto& tokens = fixture.sequences.back().tokens;
  const auto reference = f32.run(tokens, 8);
  const double error = max_relative_error(f16.run(tokens, 8), reference, fixture.vocab_size);
  MESSAGE("qwen3 F16 KV cache vs F32: max relative error " << error);
  CHECK(error < 5e-3);
}

}  // namespace
}  // namespace sluice::engine::testing
