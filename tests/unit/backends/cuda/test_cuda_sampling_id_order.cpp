// The engine's host sampler in id order (engine::DrawOrder::by_id: what an engine
// whose backend samples on the device uses for the steps it samples on the host)
// against the device's sampling semantics (sampling_reference.h), on every machine,
// and against the CUDA device for the same random stream where there is one.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "tests/unit/backends/cuda/sampling_reference.h"

namespace sluice::backends::test::unit_backends_cuda_test_cuda_sampling_id_order {
namespace {

struct DrawSetting {
  float temperature;
  int32_t top_k;
  float top_p;
  float min_p;
};
constexpr DrawSetting kDrawSettings[] = {{1.0f, 0, 1.0f, 0.0f},  {0.7f, 0, 0.9f, 0.0f},  {1.3f, 40, 1.0f, 0.0f},
                                         {0.8f, 50, 0.95f, 0.05f}, {1.0f, 0, 1.0f, 0.1f}, {2.0f, 5, 0.5f, 0.0f}};

engine::SamplingParams host_params(const DrawSetting& s) {
  engine::SamplingParams p;
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.min_p = s.min_p;
  return p;
}

// Draws `seeds` tokens with an id-order host Sampler, each from its own seeded
// stream; uniforms[i] is the one draw that stream gave.
std::vector<int32_t> host_draws_by_id(const std::vector<float>& logits, const DrawSetting& s, uint64_t seeds,
                                      std::vector<double>& uniforms) {
  engine::Sampler sampler(static_cast<int32_t>(logits.size()), engine::DrawOrder::by_id);
  std::vector<int32_t> tokens;
  uniforms.clear();
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    engine::Rng rng(seed, 0);
    engine::Rng copy = rng;
    uniforms.push_back(copy.uniform());
    tokens.push_back(sampler.sample(logits, host_params(s), {}, {}, rng).token);
  }
  return tokens;
}

// Runs on every machine: the engine's host sampler in id order (what an engine whose
// backend samples on the device uses for the steps it samples on the host) has the
// device's semantics, so a seeded sequence's draws agree whichever side samples.
TEST_CASE("host sampler in id order: the device semantics' token for the same uniform") {
  std::mt19937 rng(15);
  for (int32_t vocab : {50, 4096}) {
    for (bool flat : {false, true}) {
      const std::vector<float> logits = flat ? flat_logits(rng, vocab) : llm_logits(rng, vocab);
      for (const DrawSetting& s : kDrawSettings) {
        CAPTURE(vocab);
        CAPTURE(flat);
        CAPTURE(s.temperature);
        CAPTURE(s.top_p);
        const Reference ref = reference(logits, sampled(s.temperature, s.top_k, s.top_p, s.min_p));
        std::vector<double> uniforms;
        const std::vector<int32_t> tokens = host_draws_by_id(logits, s, 300, uniforms);
        size_t boundary = 0;
        for (size_t i = 0; i < tokens.size(); ++i) {
          const Verdict v = judge(ref, uniforms[i], tokens[i]);
          CHECK(v != Verdict::wrong);
          boundary += v == Verdict::boundary ? 1 : 0;
        }
        CHECK(static_cast<double>(boundary) <= std::max(1.0, kMaxBoundaryShare * static_cast<double>(tokens.size())));
      }
    }
  }
}

TEST_CASE("cuda sampling: the host sampler in id order draws the device's token from the same stream") {
  auto backend = cuda_backend_or_skip("cuda sampling vs the id-order host sampler");
  if (!backend) return;
  std::mt19937 rng(16);
  for (int32_t vocab : {4096, 262144}) {
    const std::vector<float> logits = llm_logits(rng, vocab);
    for (const DrawSetting& s : kDrawSettings) {
      CAPTURE(vocab);
      CAPTURE(s.temperature);
      CAPTURE(s.top_p);
      std::vector<double> uniforms;
      const std::vector<int32_t> host = host_draws_by_id(logits, s, 64, uniforms);
      std::vector<RowSampling> rows;
      for (double u : uniforms) {
        RowSampling row = sampled(s.temperature, s.top_k, s.top_p, s.min_p);
        row.uniform = u;
        rows.push_back(row);
      }
      const std::vector<SampledToken> device =
          sample_on(*backend, std::vector<std::vector<float>>(rows.size(), logits), rows);
      const Reference ref = reference(logits, rows[0]);
      size_t differing = 0;
      for (size_t i = 0; i < host.size(); ++i) {
        if (device[i].token == host[i]) continue;
        ++differing;  // only where the two libms' weights put the target on a boundary
        CHECK(judge(ref, uniforms[i], host[i]) == Verdict::boundary);
        CHECK(judge(ref, uniforms[i], device[i].token) != Verdict::wrong);
      }
      CHECK(static_cast<double>(differing) <= std::max(1.0, kMaxBoundaryShare * static_cast<double>(host.size())));
    }
  }
}

}  // namespace
}  // namespace sluice::backends::test
