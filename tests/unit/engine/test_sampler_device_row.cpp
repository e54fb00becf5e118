// Sampler::device_row resolves the history-dependent processors into per-token
// entries that a device applies as backend.h documents; applying them must give
// exactly what the host's own processors give, and the random stream must advance
// exactly as sample() advances it.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "engine/sampler.h"

namespace sluice::engine::unit_engine_test_sampler_device_row {
namespace {

// The device's rule, written out as backend.h states it.
void apply_entries(std::vector<float>& logits, std::span<const backends::LogitAdjust> adjust) {
  for (const auto& e : adjust) {
    float& x = logits[static_cast<size_t>(e.token)];
    x += e.bias;
    if (e.repetition != 1.0f) x = x > 0.0f ? x / e.repetition : x * e.repetition;
    x -= e.subtract;
  }
}

TEST_CASE("Sampler::device_row: adjust entries reproduce logit_bias and every penalty exactly") {
  constexpr int32_t kVocab = 50;
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::uniform_int_distribution<int32_t> token(-2, kVocab + 2);  // a few ids outside the vocab too
  Sampler sampler(kVocab);
  for (int round = 0; round < 200; ++round) {
    SamplingParams params;
    params.repetition_penalty = round % 3 == 0 ? 1.0f : 1.3f;
    params.frequency_penalty = round % 4 == 0 ? 0.0f : 0.4f;
    params.presence_penalty = round % 5 == 0 ? 0.0f : -0.7f;
    LogitBias bias;
    for (int i = 0; i < round % 4; ++i) bias[token(gen)] = value(gen);
    params.logit_bias = make_logit_bias(std::move(bias));
    std::vector<int32_t> prompt(static_cast<size_t>(round % 9)), output(static_cast<size_t>(round % 13));
    for (auto& t : prompt) t = token(gen);
    for (auto& t : output) t = token(gen);
    std::vector<float> logits(kVocab);
    for (auto& x : logits) x = value(gen);

    std::vector<float> host = logits;
    Sampler::apply_logit_bias(host, params.logit_bias.get());
    sampler.apply_penalties(host, params, prompt, output);

    std::vector<backends::LogitAdjust> adjust{{.token = 3, .bias = 9.0f}};  // another row's entry stays put
    Rng rng(1, 0);
    sampler.device_row(params, prompt, output, rng, adjust);
    CHECK(adjust.front().token == 3);
    std::set<int32_t> distinct;
    for (size_t i = 1; i < adjust.size(); ++i) {
      CHECK(adjust[i].token >= 0);
      CHECK(adjust[i].token < kVocab);
      CHECK(distinct.insert(adjust[i].token).second);
    }
    std::vector<float> device = logits;
    apply_entries(device, std::span(adjust).subspan(1));
    CHECK(device == host);
  }
}

TEST_CASE("Sampler::device_row: one uniform per sampled row, none for greedy, as sample() draws") {
  Sampler sampler(8);
  const std::vector<float> logits{0.1f, 0.5f, 0.2f, 0.9f, 0.3f, 0.0f, 0.4f, 0.6f};
  for (float temperature : {0.0f, 0.8f}) {
    SamplingParams params;
    params.temperature = temperature;
    params.logprobs = 30;  // more than a device returns
    Rng host_rng(5, 1), device_rng(5, 1);
    std::vector<backends::LogitAdjust> adjust;
    sampler.sample(logits, params, {}, {}, host_rng);
    const backends::RowSampling row = sampler.device_row(params, {}, {}, device_rng, adjust);
    CHECK(host_rng.next() == device_rng.next());
    CHECK(row.temperature == temperature);
    CHECK(row.num_logprobs == backends::kMaxSampledLogprobs);
    CHECK(adjust.empty());
  }
}

TEST_CASE("Sampler::from_device keeps logprobs only when the request asked for them") {
  backends::SampledToken token;
  token.token = 4;
  token.logprob = -0.5f;
  token.num_top = 3;
  token.top_tokens[0] = 4;
  token.top_tokens[1] = 1;
  token.top_tokens[2] = 2;
  SamplingParams params;
  CHECK(Sampler::from_device(token, params).top_logprobs.empty());
  params.logprobs = 2;
  const SampleResult result = Sampler::from_device(token, params);
  CHECK(result.token == 4);
  CHECK(result.logprob == -0.5f);
  REQUIRE(result.top_logprobs.size() == 2);
  CHECK(result.top_logprobs[1].token == 1);
}

}  // namespace
}  // namespace sluice::engine
