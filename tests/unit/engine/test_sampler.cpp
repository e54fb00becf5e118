#include "engine/sampler.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace sluice::engine::unit_engine_test_sampler {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> log_probs(std::vector<double> probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

SamplingParams seeded(uint64_t seed = 7) {
  SamplingParams params;
  params.seed = seed;
  return params;
}

TEST_CASE("Sampler: logit_bias adds to the named tokens and ignores ids outside the vocab") {
  std::vector<float> logits{1, 2, 3};
  const std::map<int32_t, float> bias{{0, 5.0f}, {2, -100.0f}, {7, 1.0f}, {-1, 1.0f}};
  Sampler::apply_logit_bias(logits, &bias);
  CHECK(logits == std::vector<float>{6, 2, -97});
}

TEST_CASE("Sampler: repetition penalty divides positive and multiplies negative logits, once per token") {
  Sampler sampler(5);
  std::vector<float> logits{2, -2, 4, 1, 0};
  SamplingParams params;
  params.repetition_penalty = 2.0f;
  const std::vector<int32_t> prompt{0, 0, 1};
  const std::vector<int32_t> output{2, 1, 2};
  sampler.apply_penalties(logits, params, prompt, output);
  CHECK(logits == std::vector<float>{1, -4, 2, 1, 0});
  // Scratch state is reset: the same call again gives the same change.
  std::vector<float> again{2, -2, 4, 1, 0};
  sampler.apply_penalties(again, params, prompt, output);
  CHECK(again == logits);
}

TEST_CASE("Sampler: frequency and presence penalties count output tokens only") {
  Sampler sampler(4);
  std::vector<float> logits{0, 0, 0, 0};
  SamplingParams params;
  params.frequency_penalty = 0.5f;
  params.presence_penalty = 0.25f;
  const std::vector<int32_t> prompt{3, 3, 3};
  const std::vector<int32_t> output{1, 2, 1, 1};
  sampler.apply_penalties(logits, params, prompt, output);
  CHECK(logits[0] == 0.0f);
  CHECK(logits[1] == doctest::Approx(-(3 * 0.5 + 0.25)));
  CHECK(logits[2] == doctest::Approx(-(1 * 0.5 + 0.25)));
  CHECK(logits[3] == 0.0f);
}

TEST_CASE("Sampler: temperature divides the logits") {
  std::vector<float> logits{1, -2, 4};
  Sampler::apply_temperature(logits, 0.5f);
  CHECK(logits == std::vector<float>{2, -4, 8});
}

TEST_CASE("Sampler: top_k keeps the k largest, the lower id on ties") {
  Sampler sampler(5);
  std::vector<float> logits{1, 3, 2, 3, 0};
  sampler.apply_top_k_top_p_min_p(logits, 2, 1.0f, 0.0f);
  CHECK(logits == std::vector<float>{kNegInf, 3, kNegInf, 3, kNegInf});
  std::vector<float> ties{5, 5, 5, 5, 5};
  sampler.apply_top_k_top_p_min_p(ties, 3, 1.0f, 0.0f);
  CHECK(ties == std::vector<float>{5, 5, 5, kNegInf, kNegInf});
}

TEST_CASE("Sampler: top_p keeps the shortest prefix reaching p") {
  Sampler sampler(4);
  const auto base = log_probs({0.15, 0.5, 0.05, 0.3});  // order: 1, 3, 0, 2
  auto logits = base;
  sampler.apply_top_k_top_p_min_p(logits, 0, 0.75f, 0.0f);  // 0.5 < 0.75 <= 0.8
  CHECK(logits == std::vector<float>{kNegInf, base[1], kNegInf, base[3]});
  logits = base;
  sampler.apply_top_k_top_p_min_p(logits, 0, 0.85f, 0.0f);  // 0.8 < 0.85 <= 0.95
  CHECK(logits == std::vector<float>{base[0], base[1], kNegInf, base[3]});
  // After top_k = 2 the kept mass (0.8) is renormalised: p = 0.6 needs 0.5/0.8 = 0.625 -> 1 token.
  logits = base;
  sampler.apply_top_k_top_p_min_p(logits, 2, 0.6f, 0.0f);
  CHECK(logits == std::vector<float>{kNegInf, base[1], kNegInf, kNegInf});
}

TEST_CASE("Sampler: min_p keeps tokens with at least min_p times the top probability") {
  Sampler sampler(4);
  const auto base = log_probs({0.15, 0.5, 0.05, 0.3});
  auto logits = base;
  sampler.apply_top_k_top_p_min_p(logits, 0, 1.0f, 0.25f);  // threshold 0.125
  CHECK(logits == std::vector<float>{base[0], base[1], kNegInf, base[3]});
  logits = base;
  sampler.apply_top_k_top_p_min_p(logits, 0, 1.0f, 0.7f);  // threshold 0.35
  CHECK(logits == std::vector<float>{kNegInf, base[1], kNegInf, kNegInf});
}

TEST_CASE("Sampler: greedy picks the argmax after bias and penalties, the lowest id on ties") {
  CHECK(Sampler::argmax(std::vector<float>{1, 3, 3, 2}) == 1);
  Sampler sampler(4);
  SamplingParams params;
  params.temperature = 0.0f;
  Rng rng(1, 0);
  const std::vector<float> logits{1, 3, 3, 2};
  CHECK(sampler.sample(logits, params, {}, {}, rng).token == 1);
  params.logit_bias = make_logit_bias({{2, 0.5f}});
  CHECK(sampler.sample(logits, params, {}, {}, rng).token == 2);
  params.logit_bias.reset();
  params.presence_penalty = 1.5f;
  const std::vector<int32_t> output{1, 2};
  CHECK(sampler.sample(logits, params, {}, output, rng).token == 3);
  // top_k = 1 at any temperature is greedy too.
  SamplingParams top1 = seeded();
  top1.top_k = 1;
  CHECK(sampler.sample(logits, top1, {}, {}, rng).token == 1);
}

TEST_CASE("Sampler: the same seed and logits give the same tokens") {
  Sampler sampler(64);
  std::vector<float> logits(64);
  for (int i = 0; i < 64; ++i) logits[i] = std::sin(static_cast<float>(i));
  const SamplingParams params = seeded(1234);
  auto draw = [&](uint64_t seed, uint64_t stream) {
    Rng rng(seed, stream);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 50; ++i) tokens.push_back(sampler.sample(logits, params, {}, {}, rng).token);
    return tokens;
  };
  CHECK(draw(1234, 0) == draw(1234, 0));
  CHECK(draw(1234, 0) != draw(1235, 0));
  CHECK(draw(1234, 0) != draw(1234, 1));  // n > 1: each choice its own stream
}

TEST_CASE("Sampler: a sequence's draws do not depend on the rest of the batch") {
  Sampler sampler(32);
  std::vector<float> logits(32);
  for (int i = 0; i < 32; ++i) logits[i] = std::cos(0.3f * i);
  SamplingParams params = seeded(99);
  params.top_p = 0.9f;
  SamplingParams other_params = seeded(5);
  other_params.temperature = 0.7f;

  Rng alone(99, 0);
  std::vector<int32_t> solo;
  for (int i = 0; i < 30; ++i) solo.push_back(sampler.sample(logits, params, {}, {}, alone).token);

  Rng mine(99, 0), other(5, 0);
  std::vector<int32_t> batched;
  for (int i = 0; i < 30; ++i) {
    sampler.sample(logits, other_params, {}, {}, other);
    batched.push_back(sampler.sample(logits, params, {}, {}, mine).token);
    sampler.sample(logits, other_params, {}, {}, other);
  }
  CHECK(batched == solo);
}

TEST_CASE("Sampler: draws follow the distribution") {
  Sampler sampler(3);
  const auto logits = log_probs({0.2, 0.7, 0.1});
  const SamplingParams params = seeded(3);
  Rng rng(3, 0);
  std::vector<int> counts(3, 0);
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) ++counts[sampler.sample(logits, params, {}, {}, rng).token];
  CHECK(counts[0] / double(draws) == doctest::Approx(0.2).epsilon(0.1));
  CHECK(counts[1] / double(draws) == doctest::Approx(0.7).epsilon(0.05));
  CHECK(counts[2] / double(draws) == doctest::Approx(0.1).epsilon(0.15));
}

TEST_CASE("Sampler: a wide nucleus on a large vocabulary stays inside the nucleus") {
  const int vocab = 20000;
  Sampler sampler(vocab);
  std::vector<float> logits(vocab);
  for (int i = 0; i < vocab; ++i) logits[i] = static_cast<float>((i * 7919) % 1000) / 300.0f;
  SamplingParams params = seeded(11);
  params.top_p = 0.5f;
  // The nucleus by brute force: sort everything, take the shortest prefix with mass >= p.
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  const float max = logits[order[0]];
  double total = 0;
  for (float v : logits) total += std::exp(v - max);
  std::vector<uint8_t> in_nucleus(vocab, 0);
  double cum = 0;
  int nucleus_size = 0;
  for (int id : order) {
    in_nucleus[id] = 1;
    ++nucleus_size;
    cum += std::exp(logits[id] - max);
    if (cum >= 0.5 * total) break;
  }
  REQUIRE(nucleus_size > 64);  // more than one quickselect round
  Rng rng(11, 0);
  for (int i = 0; i < 200; ++i) {
    const int32_t token = sampler.sample(logits, params, {}, {}, rng).token;
    REQUIRE(in_nucleus[token]);
  }
}

// The textbook sampler: sort everything, cut top_k / top_p / min_p, walk the CDF.
int32_t reference_draw(std::vector<float> logits, const SamplingParams& p, double u) {
  for (float& v : logits) v /= p.temperature;
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  const float max = logits[order[0]];
  std::vector<double> w;
  for (int id : order) w.push_back(std::exp(logits[id] - max));
  size_t keep = order.size();
  if (p.top_k > 0) keep = std::min<size_t>(keep, p.top_k);
  double mass = std::accumulate(w.begin(), w.begin() + keep, 0.0);
  if (p.top_p < 1.0f) {
    double cum = 0;
    size_t i = 0;
    while (i < keep) {
      cum += w[i++];
      if (cum >= p.top_p * mass) break;
    }
    keep = i;
  }
  size_t min_p_keep = 0;
  while (min_p_keep < keep && w[min_p_keep] >= p.min_p) ++min_p_keep;
  keep = min_p_keep;
  mass = std::accumulate(w.begin(), w.begin() + keep, 0.0);
  double cum = 0;
  for (size_t i = 0; i < keep; ++i) {
    cum += w[i];
    if (cum > u * mass) return order[i];
  }
  return order[keep - 1];
}

TEST_CASE("Sampler: the quickselect draw matches a full sort and CDF walk") {
  // Flat: nearly every token is on the heavy side of the first split. Peaked (a
  // 50k vocabulary, 20 tokens far above the rest): most draws end among the heavy
  // few, some in the long tail below the split (counted below).
  for (const bool peaked : {false, true}) {
    CAPTURE(peaked);
    const int vocab = peaked ? 50000 : 5000;
    Sampler sampler(vocab);
    Rng fill(2024, 0);
    std::vector<float> logits(vocab);
    for (float& v : logits) v = static_cast<float>(fill.uniform() * (peaked ? 8.0 : 12.0) - 6.0);
    if (peaked)
      for (int i = 0; i < 20; ++i) logits[i * 2477] = static_cast<float>(8.0 + fill.uniform() * 4.0);
    logits[17] = logits[4000];  // a tie across the order
    std::vector<SamplingParams> cases(5, seeded(77));
    cases[1].top_p = 0.9f;
    cases[2].top_k = 300;
    cases[2].top_p = 0.7f;
    cases[3].min_p = 0.05f;
    cases[3].temperature = 1.5f;
    cases[4].top_k = 1000;
    cases[4].top_p = 0.95f;
    cases[4].min_p = 0.01f;
    cases[4].temperature = 0.6f;
    const float max = *std::max_element(logits.begin(), logits.end());
    int tail_draws = 0;  // of case 0 (temperature 1, no filter): below the heavy split
    for (size_t c = 0; c < cases.size(); ++c) {
      CAPTURE(c);
      Rng rng(77, c), shadow(77, c);
      for (int i = 0; i < 200; ++i) {
        const double u = shadow.uniform();
        const int32_t token = sampler.sample(logits, cases[c], {}, {}, rng).token;
        REQUIRE(token == reference_draw(logits, cases[c], u));
        if (c == 0 && std::exp(logits[token] - max) < 1.0f / 1024) ++tail_draws;
      }
    }
    if (peaked) CHECK((tail_draws > 0 && tail_draws < 100));
  }
}

TEST_CASE("Sampler: logprobs are the raw model's, the chosen one plus the top N in order") {
  Sampler sampler(5);
  const std::vector<float> logits{0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  std::vector<float> expected(5);
  Sampler::log_softmax(logits, expected);
  double sum = 0;
  for (float v : expected) sum += std::exp(v);
  CHECK(sum == doctest::Approx(1.0));

  SamplingParams params = seeded(5);
  params.temperature = 0.3f;  // processors must not change the reported values
  params.logit_bias = make_logit_bias({{2, 50.0f}});
  params.logprobs = 3;
  Rng rng(5, 0);
  const SampleResult result = sampler.sample(logits, params, {}, {}, rng);
  CHECK(result.token == 2);  // the bias made it certain
  CHECK(result.logprob == doctest::Approx(expected[2]));
  REQUIRE(result.top_logprobs.size() == 3);
  CHECK(result.top_logprobs[0].token == 1);  // tie with 3: lower id first
  CHECK(result.top_logprobs[1].token == 3);
  CHECK(result.top_logprobs[2].token == 4);
  CHECK(result.top_logprobs[0].logprob == doctest::Approx(expected[1]));
  CHECK(result.top_logprobs[2].logprob == doctest::Approx(expected[4]));

  params.logprobs = 0;
  const SampleResult chosen_only = sampler.sample(logits, params, {}, {}, rng);
  CHECK(chosen_only.top_logprobs.empty());
  CHECK(chosen_only.logprob == doctest::Approx(expected[2]));
}

TEST_CASE("Sampler: NaN never wins and a fully masked row still yields a token") {
  Sampler sampler(3);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  Rng rng(1, 0);
  CHECK(sampler.sample(std::vector<float>{nan, 1.0f, 0.0f}, greedy, {}, {}, rng).token == 1);
  const SamplingParams params = seeded(1);
  const std::vector<float> masked{kNegInf, kNegInf, kNegInf};
  CHECK(sampler.sample(masked, params, {}, {}, rng).token == 0);
}

TEST_CASE("Sampler: min_tokens masks the banned ids until the output is long enough") {
  Sampler sampler(4);
  SamplingParams params;
  params.temperature = 0.0f;
  params.min_tokens = 2;
  params.min_tokens_banned = {3};
  Rng rng(1, 0);
  const std::vector<float> logits{1, 2, 0, 9};
  const std::vector<int32_t> one{1};
  const std::vector<int32_t> two{1, 1};
  CHECK(sampler.sample(logits, params, {}, {}, rng).token == 1);
  CHECK(sampler.sample(logits, params, {}, one, rng).token == 1);
  CHECK(sampler.sample(logits, params, {}, two, rng).token == 3);
  // The device path gets the same mask as a -infinity bias entry.
  std::vector<backends::LogitAdjust> adjust;
  (void)sampler.device_row(params, {}, one, rng, adjust);
  REQUIRE(adjust.size() == 1);
  CHECK(adjust[0].token == 3);
  CHECK(std::isinf(adjust[0].bias));
  adjust.clear();
  (void)sampler.device_row(params, {}, two, rng, adjust);
  CHECK(adjust.empty());
}

}  // namespace
}  // namespace sluice::engine
