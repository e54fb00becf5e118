// Greedy decoding of the real default model (models/SmolLM2-135M-Instruct.Q4_1.gguf,
// fetched by `make test-models`) on a fast path equals the CPU reference path's
// (F32 activations, the numerics the transformers goldens are checked with): the
// CUDA backend, and the CPU's own integer kernels (int8 activations; their logits
// move by activation rounding: measured up to 4.5e-2 of max|logit| (0.8 logits),
// bounded by kInt8LogitTolerance = 6e-2; llama.cpp, which rounds activations the
// same way, gives the same greedy text on these prompts):
// 32 greedy tokens (Model::forward + Sampler::argmax, one decode step per token, F16
// KV cache as served) for the prompts of tests/fixtures/real_models/greedy_goldens.json
// (their token ids, so no tokenizer is involved) and one longer prompt made of
// them all (its 30-token prefill takes the large-T matmul path, where the GPU may
// round to F16; the short prompts and every decode step take the small-T path).
//
// At every step both backends have the same context (the tokens so far agree), so
// their logits are comparable:
//   - logits: max|gpu - cpu| / max|cpu| per step < kLogitTolerance = 2e-2, the bound
//     of the quantized fixtures in test_model_parity.cpp (F16 GEMMs on the GPU).
//   - tokens: equal, compared until the first step where the CPU's top-2 logit gap
//     is below max(1e-2, E), E = that step's max|gpu - cpu| over the vocabulary:
//     there the argmax may legitimately flip, and everything after would diverge
//     for no bug. Why not 1e-2 alone: F16 GEMMs (the GPU's F16-weight and large-T
//     paths) move SmolLM2's logits by E ~ 0.03 (measured with those roundings
//     emulated on the CPU), and top-2 gaps of 0.01 .. 0.03 occur within 32 steps.
//     Why not 2E (the gap below which a flip is arithmetically possible): every
//     mismatch would then be excused, leaving the token check without teeth. A
//     flip at a gap above E needs the two tokens' errors to be near the vocabulary
//     maximum with opposite signs, which rounding noise does not do.
//     How many steps each prompt compared, and where it stopped, is printed.
// Skips (tests/unit/prerequisites.h) without a CUDA device (that case) or without the model file.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "engine/loader/weight_source.h"
#include "engine/sampler.h"
#include "tests/unit/backends/backend_test_util.h"
#include "tests/unit/engine/models/model_fixture.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::testing::unit_engine_models_test_model_greedy {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
constexpr int kSteps = 32;
constexpr double kLogitTolerance = 2e-2;
constexpr double kInt8LogitTolerance = 6e-2;
constexpr double kMinGap = 1e-2;
constexpr size_t kLongPrompt = 30;  // + 31 fed tokens fits a ModelRunner region (64)

struct Generation {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;  // [step][vocab]
};

// Greedy: the prompt in one step, then one token per step, logits of the last row.
Generation generate(ModelRunner& runner, const std::vector<int32_t>& prompt) {
  Generation g;
  std::vector<int32_t> feed = prompt;
  int32_t cached = 0;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<float> logits = runner.step({feed}, {cached}, {0}, {static_cast<int32_t>(feed.size()) - 1});
    cached += static_cast<int32_t>(feed.size());
    const int32_t token = Sampler::argmax(logits);
    g.tokens.push_back(token);
    g.logits.push_back(std::move(logits));
    feed = {token};
  }
  return g;
}

double top2_gap(const std::vector<float>& logits) {
  float first = -INFINITY, second = -INFINITY;
  for (float x : logits) {
    if (x > first) second = first, first = x;
    else if (x > second) second = x;
  }
  return double(first) - double(second);
}

std::vector<std::vector<int32_t>> prompts_from_goldens() {
  const fs::path path = fs::path(SLUICE_FIXTURES_DIR) / "real_models" / "greedy_goldens.json";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  const auto goldens = nlohmann::json::parse(in);
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& c : goldens.at("models").at(kModelFile).at("prompts"))
    prompts.push_back(c.at("prompt_ids").get<std::vector<int32_t>>());
  REQUIRE(!prompts.empty());
  std::vector<int32_t> all;
  for (const auto& p : prompts) all.insert(all.end(), p.begin(), p.end());
  all.resize(std::min(all.size(), kLongPrompt));
  prompts.push_back(all);
  return prompts;
}

fs::path model_path() {
  return fs::path(SLUICE_FIXTURES_DIR).parent_path().parent_path() / "models" / kModelFile;
}

// `fast` against the CPU reference path on every prompt; `what` names it in messages.
void check_greedy_equality(backends::Backend& fast, const std::string& what, double logit_tolerance) {
  const auto prompts = prompts_from_goldens();
  const std::shared_ptr<const loader::WeightSource> weights = loader::open_gguf_weights(model_path());
  auto cpu = backends::make_reference_cpu_backend(0);
  ModelRunner on_cpu(weights, *cpu, backends::DType::F16);
  ModelRunner on_fast(weights, fast, backends::DType::F16);

  int total_compared = 0;
  double worst_logit_error = 0.0;
  for (size_t p = 0; p < prompts.size(); ++p) {
    CAPTURE(p);
    const Generation c = generate(on_cpu, prompts[p]);  // c: the reference, g: the path under test
    const Generation g = generate(on_fast, prompts[p]);
    int compared = 0;
    std::string stop = "all steps";
    for (int step = 0; step < kSteps; ++step) {
      CAPTURE(step);
      const auto& cl = c.logits[size_t(step)];
      const auto& gl = g.logits[size_t(step)];
      double max_diff = 0.0, max_abs = 0.0;
      for (size_t i = 0; i < cl.size(); ++i) {
        const double d = std::fabs(double(gl[i]) - cl[i]);
        max_diff = std::isnan(d) ? INFINITY : std::max(max_diff, d);
        max_abs = std::max(max_abs, std::fabs(double(cl[i])));
      }
      const double relative = max_diff / std::max(max_abs, 1e-30);
      worst_logit_error = std::max(worst_logit_error, relative);
      CHECK(relative < logit_tolerance);
      const double gap = top2_gap(cl);
      if (gap < std::max(kMinGap, max_diff)) {
        stop = "step " + std::to_string(step) + " (CPU top-2 gap " + std::to_string(gap) + ", max logit diff " +
               std::to_string(max_diff) + ")";
        break;
      }
      CHECK(g.tokens[size_t(step)] == c.tokens[size_t(step)]);
      if (g.tokens[size_t(step)] != c.tokens[size_t(step)]) break;
      ++compared;
    }
    total_compared += compared;
    MESSAGE("prompt " << p << " (" << prompts[p].size() << " tokens): " << compared << " of " << kSteps
                      << " greedy tokens compared equal; stopped at " << stop);
  }
  MESSAGE(what << " vs CPU reference greedy: worst relative logit difference " << worst_logit_error);
  // Every prompt's first token has a wide margin (the goldens' first margins are >= 0.39).
  CHECK(total_compared >= static_cast<int>(prompts.size()));
}

TEST_CASE("real model: 32 greedy tokens on CUDA == on the CPU (SmolLM2-135M Q4_1)") {
  auto gpu = backends::test::cuda_backend_or_skip("CUDA greedy equality");
  if (!gpu) return;
  if (!sluice::testing::has_model_file(model_path(), "CUDA greedy equality")) return;
  check_greedy_equality(*gpu, "CUDA", kLogitTolerance);
}

TEST_CASE("real model: 32 greedy tokens on the CPU integer kernels == the CPU reference (SmolLM2-135M Q4_1)") {
  if (!sluice::testing::has_model_file(model_path(), "CPU integer-kernel greedy equality")) return;
  auto cpu = backends::make_cpu_backend(0);
  check_greedy_equality(*cpu, "CPU " + cpu->kernel_path(), kInt8LogitTolerance);
}

}  // namespace
}  // namespace sluice::engine::testing
