// Sampling on the CUDA device (Backend::sample) against the host:
//   - greedy rows, with and without adjust entries, against engine::Sampler: the
//     same token, the chosen token's logprob and the top logprobs;
//   - sampled rows against a small host reference of the device's semantics
//     (sampling_reference.h), for many uniforms, on small and real-size vocabularies;
//   - tokens outside top_k / top_p / min_p are never drawn;
//   - determinism, batch invariance, strided logits, NaN and fully masked rows.
// (The host sampler in id order against the same reference and the device:
// test_cuda_sampling_id_order.cpp.) Only the public interface is used
// (backend_factory.h through backend_test_util.h), so this compiles with g++ in every
// build and each TEST_CASE skips with a MESSAGE where there is no CUDA device.
// Tolerances: sampling_reference.h.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/backends/cuda/sampling_reference.h"

namespace sluice::backends::test::unit_backends_cuda_test_cuda_sampling {
namespace {

// --- tests ------------------------------------------------------------------------------------

TEST_CASE("cuda sampling: greedy rows and logprobs match the host Sampler") {
  auto backend = cuda_backend_or_skip("cuda sampling greedy");
  if (!backend) return;
  std::mt19937 rng(11);
  for (int32_t vocab : {1, 7, 5000, 262144}) {
    CAPTURE(vocab);
    // Per row: the request's params (greedy) and history, and its logits.
    std::vector<engine::SamplingParams> params;
    std::vector<History> histories;
    std::vector<std::vector<float>> logits;
    const auto add = [&](engine::SamplingParams p, History h, std::vector<float> v) {
      p.temperature = 0.0f;
      params.push_back(std::move(p));
      histories.push_back(std::move(h));
      logits.push_back(std::move(v));
    };
    engine::SamplingParams plain;
    plain.logprobs = 20;
    add(plain, {}, llm_logits(rng, vocab));
    {  // NaNs never win; ties at the max go to the lower id
      std::vector<float> v = llm_logits(rng, vocab);
      for (size_t i = 0; i < v.size(); i += 3) v[i] = std::numeric_limits<float>::quiet_NaN();
      if (vocab > 4) v[2] = v[4] = 50.0f;
      engine::SamplingParams p;
      p.logprobs = 5;
      add(p, {}, v);
    }
    {  // more equal logits at the top than logprobs asked for: the lowest ids
      std::vector<float> v = flat_logits(rng, vocab);
      for (size_t i = v.size() / 3; i < v.size(); i += std::max<size_t>(1, v.size() / 40)) v[i] = 7.5f;
      engine::SamplingParams p;
      p.logprobs = 20;
      add(p, {}, v);
    }
    {  // only a few finite logits: -inf alternatives, lowest ids first
      std::vector<float> v(size_t(vocab), -kInf);
      for (size_t i = 0; i < v.size(); i += std::max<size_t>(1, v.size() / 3)) v[i] = static_cast<float>(i % 5);
      engine::SamplingParams p;
      p.logprobs = 20;
      add(p, {}, v);
    }
    const std::vector<int32_t> ids = random_ints(rng, 6, 0, vocab - 1);
    engine::SamplingParams bias;
    bias.logit_bias = engine::make_logit_bias({{ids[0], 30.0f}, {ids[1], -100.0f}, {ids[2], 0.5f}});
    bias.logprobs = 3;
    add(bias, {}, llm_logits(rng, vocab));
    engine::SamplingParams repetition;
    repetition.repetition_penalty = 1.3f;
    add(repetition, random_history(rng, vocab, 40, 12), llm_logits(rng, vocab));
    engine::SamplingParams penalties;
    penalties.frequency_penalty = 0.7f;
    penalties.presence_penalty = 1.5f;
    penalties.logprobs = 0;
    add(penalties, random_history(rng, vocab, 10, 30), llm_logits(rng, vocab));
    engine::SamplingParams all;
    all.logit_bias = engine::make_logit_bias({{ids[3], 2.0f}, {ids[4], -3.0f}});
    all.repetition_penalty = 0.8f;
    all.frequency_penalty = -0.4f;
    all.presence_penalty = 0.25f;
    all.logprobs = 20;
    {  // strongly penalised candidates, so the processors decide the argmax
      History h = random_history(rng, vocab, 20, 20);
      std::vector<float> v = llm_logits(rng, vocab);
      for (int32_t t : h.output) v[size_t(t)] = 20.0f;
      add(all, h, v);
    }

    std::vector<RowSampling> rows(params.size());
    std::vector<std::vector<LogitAdjust>> adjust(params.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      adjust[r] = adjust_for(params[r], histories[r], vocab, rng);
      if (r == 1) adjust[r].push_back({.token = -1, .bias = 100.0f});  // outside the vocab: ignored
      if (r == 1) adjust[r].push_back({.token = vocab + 3, .bias = 100.0f});
      rows[r].temperature = 0.0f;
      rows[r].uniform = 0.5;
      rows[r].num_logprobs = params[r].logprobs.value_or(0);
      rows[r].adjust = adjust[r];
    }
    const std::vector<SampledToken> got = sample_on(*backend, logits, rows);

    engine::Sampler sampler(vocab);
    for (size_t r = 0; r < rows.size(); ++r) {
      CAPTURE(r);
      engine::Rng host_rng(1, 0);
      engine::SamplingParams p = params[r];
      p.logprobs = p.logprobs.value_or(0);  // the device always reports the chosen token's logprob
      const engine::SampleResult want = sampler.sample(logits[r], p, histories[r].prompt, histories[r].output, host_rng);
      CHECK(got[r].token == want.token);
      check_logprob(got[r].logprob, want.logprob, "chosen");
      REQUIRE(got[r].num_top == static_cast<int32_t>(want.top_logprobs.size()));
      for (size_t i = 0; i < want.top_logprobs.size(); ++i) {
        CAPTURE(i);
        CHECK(got[r].top_tokens[i] == want.top_logprobs[i].token);
        check_logprob(got[r].top_logprobs[i], want.top_logprobs[i].logprob, "top");
      }
    }
  }
}

TEST_CASE("cuda sampling: top_k = 1 is greedy") {
  auto backend = cuda_backend_or_skip("cuda sampling top_k = 1");
  if (!backend) return;
  std::mt19937 rng(12);
  for (int32_t vocab : {9, 32000}) {
    CAPTURE(vocab);
    const std::vector<float> logits = llm_logits(rng, vocab);
    engine::SamplingParams p;
    p.repetition_penalty = 1.2f;
    p.frequency_penalty = 0.5f;
    const History h = random_history(rng, vocab, 8, 8);
    const std::vector<LogitAdjust> adjust = adjust_for(p, h, vocab, rng);
    engine::Sampler sampler(vocab);
    engine::Rng host_rng(2, 0);
    p.temperature = 0.0f;
    const int32_t greedy = sampler.sample(logits, p, h.prompt, h.output, host_rng).token;
    RowSampling row = sampled(0.9f, 1, 1.0f, 0.0f);
    row.adjust = adjust;
    const std::vector<int32_t> tokens = check_draws(*backend, logits, row, spread_uniforms(64), "top_k 1");
    for (int32_t t : tokens) CHECK(t == greedy);
  }
}

TEST_CASE("cuda sampling: sampled rows match the host reference") {
  auto backend = cuda_backend_or_skip("cuda sampling draws");
  if (!backend) return;
  std::mt19937 rng(13);
  struct Setting {
    float temperature;
    int32_t top_k;
    float top_p;
    float min_p;
  };
  const Setting settings[] = {{1.0f, 0, 1.0f, 0.0f},  {0.7f, 0, 0.9f, 0.0f},  {1.3f, 40, 1.0f, 0.0f},
                              {0.8f, 50, 0.95f, 0.05f}, {1.0f, 0, 1.0f, 0.1f}, {2.0f, 5, 0.5f, 0.0f},
                              {0.5f, 0, 0.0f, 0.0f}};
  for (int32_t vocab : {50, 4096, 262144}) {
    for (bool flat : {false, true}) {
      const std::vector<float> logits = flat ? flat_logits(rng, vocab) : llm_logits(rng, vocab);
      for (const Setting& s : settings) {
        const std::string what = "vocab " + std::to_string(vocab) + (flat ? " flat" : " llm") + " T " +
                                 std::to_string(s.temperature) + " k " + std::to_string(s.top_k) + " p " +
                                 std::to_string(s.top_p) + " min_p " + std::to_string(s.min_p);
        RowSampling row = sampled(s.temperature, s.top_k, s.top_p, s.min_p);
        check_draws(*backend, logits, row, spread_uniforms(vocab > 10000 ? 48 : 200), what);
      }
      // With adjust entries.
      engine::SamplingParams p;
      p.logit_bias = engine::make_logit_bias({{vocab / 2, 4.0f}, {vocab - 1, -2.0f}});
      p.repetition_penalty = 1.25f;
      p.frequency_penalty = 0.3f;
      p.presence_penalty = 0.2f;
      const std::vector<LogitAdjust> adjust = adjust_for(p, random_history(rng, vocab, 30, 30), vocab, rng);
      RowSampling row = sampled(0.9f, 30, 0.9f, 0.01f);
      row.adjust = adjust;
      check_draws(*backend, logits, row, spread_uniforms(vocab > 10000 ? 48 : 200),
                  "vocab " + std::to_string(vocab) + " with adjust entries");
    }
  }
}

// The settings the draw tests run: temperature, top_k, top_p, min_p.
TEST_CASE("cuda sampling: tokens outside top_k, top_p and min_p are never drawn") {
  auto backend = cuda_backend_or_skip("cuda sampling kept set");
  if (!backend) return;
  std::mt19937 rng(14);
  const int32_t vocab = 32000;
  const std::vector<float> logits = flat_logits(rng, vocab);
  const std::vector<double> uniforms = spread_uniforms(1000);
  for (const RowSampling& row : {sampled(1.0f, 10, 1.0f, 0.0f), sampled(0.05f, 0, 0.3f, 0.0f),
                                 sampled(0.02f, 0, 1.0f, 0.5f), sampled(1.0f, 100, 0.2f, 0.9f)}) {
    const Reference ref = reference(logits, row);
    size_t kept = 0;
    for (uint8_t k : ref.kept) kept += k;
    CAPTURE(kept);
    const std::vector<int32_t> tokens = check_draws(*backend, logits, row, uniforms, "kept set");
    std::vector<uint8_t> seen(size_t(vocab), 0);
    for (int32_t t : tokens) {
      REQUIRE(t >= 0);
      REQUIRE(t < vocab);
      CHECK((ref.kept[size_t(t)] || ref.borderline[size_t(t)]));
      seen[size_t(t)] = 1;
    }
    size_t distinct = 0;
    for (uint8_t s : seen) distinct += s;
    CHECK(distinct > std::min<size_t>(kept, 50) / 2);  // the draws spread over the kept set
  }

  // top_k keeps every token tied with the k-th value (the host keeps exactly k).
  std::vector<float> tied(64, 0.0f);
  tied[5] = tied[9] = tied[30] = 3.0f;
  const std::vector<int32_t> tokens = check_draws(*backend, tied, sampled(1.0f, 2, 1.0f, 0.0f), spread_uniforms(30), "ties");
  for (int32_t id : {5, 9, 30}) CHECK(std::count(tokens.begin(), tokens.end(), id) > 0);
  for (int32_t t : tokens) CHECK((t == 5 || t == 9 || t == 30));
}

TEST_CASE("cuda sampling: deterministic and batch invariant") {
  auto backend = cuda_backend_or_skip("cuda sampling batch invariance");
  if (!backend) return;
  std::mt19937 rng(15);
  const int32_t vocab = 151936;
  std::vector<std::vector<float>> logits;
  std::vector<RowSampling> rows;
  std::vector<std::vector<LogitAdjust>> adjust(7);
  const float settings[][4] = {{0.0f, 0, 1.0f, 0.0f}, {1.0f, 0, 1.0f, 0.0f}, {0.7f, 40, 0.9f, 0.0f},
                               {1.5f, 0, 0.8f, 0.05f}, {0.9f, 5, 1.0f, 0.0f}, {1.0f, 0, 0.95f, 0.0f},
                               {0.6f, 100, 0.7f, 0.02f}};
  for (size_t r = 0; r < 7; ++r) {
    logits.push_back(r % 2 ? flat_logits(rng, vocab) : llm_logits(rng, vocab));
    RowSampling row = sampled(settings[r][0], static_cast<int32_t>(settings[r][1]), settings[r][2], settings[r][3]);
    row.uniform = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    row.num_logprobs = static_cast<int32_t>(r * 3);
    if (r % 3 == 1) {
      engine::SamplingParams p;
      p.repetition_penalty = 1.1f;
      p.presence_penalty = 0.5f;
      adjust[r] = adjust_for(p, random_history(rng, vocab, 50, 20), vocab, rng);
    }
    row.adjust = adjust[r];
    rows.push_back(row);
  }
  const std::vector<SampledToken> batch = sample_on(*backend, logits, rows);
  const std::vector<SampledToken> again = sample_on(*backend, logits, rows);
  const std::vector<SampledToken> strided = sample_on(*backend, logits, rows, 5);
  for (size_t r = 0; r < rows.size(); ++r) {
    CAPTURE(r);
    CHECK(same_result(batch[r], again[r]));
    CHECK(same_result(batch[r], strided[r]));
    const std::vector<SampledToken> alone = sample_on(*backend, {logits[r]}, {rows[r]});
    CHECK(same_result(batch[r], alone[0]));
  }
}

TEST_CASE("cuda sampling: NaN and fully masked rows") {
  auto backend = cuda_backend_or_skip("cuda sampling masked rows");
  if (!backend) return;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<float>> logits{
      {nan, 1.0f, 0.0f, nan}, {nan, 1.0f, 0.0f, nan}, {-kInf, -kInf, -kInf, -kInf},
      {-kInf, -kInf, -kInf, -kInf}, {nan, nan, nan, nan}, {0.5f, 2.0f, 1.0f, 2.0f}};
  std::vector<RowSampling> rows(logits.size());
  rows[0].temperature = 0.0f;
  rows[1].uniform = 0.5;
  rows[2].temperature = 0.0f;
  rows[3].uniform = 0.5;
  rows[4].uniform = 0.3;
  rows[5] = sampled(1.0f, 0, 1.0f, 1.5f);  // min_p > 1 keeps nothing: the argmax, lower id on ties
  rows[5].uniform = 0.7;
  const std::vector<SampledToken> got = sample_on(*backend, logits, rows);
  CHECK(got[0].token == 1);
  CHECK(got[1].token == 1);  // NaN carries no weight: the CDF is token 1 (1), token 2 (e^-1)
  CHECK(got[2].token == 0);
  CHECK(got[3].token == 0);
  CHECK(got[4].token == 0);
  CHECK(got[5].token == 1);
  CHECK(got[2].logprob != got[2].logprob);  // -inf - log_z(-inf), as on the host
  CHECK(got[4].logprob == -kInf);
}

}  // namespace
}  // namespace sluice::backends::test
