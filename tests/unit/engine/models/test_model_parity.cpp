// Logits of every fixture model, in every format, against Hugging Face transformers,
// on the CPU backend and (where a device exists) on the CUDA backend: one helper
// takes the Backend and the bounds.
//
// Error measure: for each position, max|ours - ref| over the vocabulary divided by
// max|ref| over the same row; the test reports (MESSAGE) and bounds the worst row.
//   - F32 weights (safetensors, GGUF F32) against the float32 HF forward:
//     kF32Tolerance. Measured: 0.5e-6 .. 1.3e-6.
//   - Quantized GGUF against HF run on the dequantized weights (the same weight
//     rounding, so only F32 arithmetic differs; the CPU backend never quantizes
//     activations): kTightTolerance. Measured: 0.4e-6 .. 1.4e-6.
//   - Quantized GGUF against the float32 reference: what quantizing the weights
//     costs, so the bound derives from the reference's own gap g = err(deq, f32):
//     ours may be no further from f32 than g + 2 * kTightTolerance, and g itself
//     must stay under a per-format ceiling (the measured worst over the fixtures,
//     rounded up): Q8_0 0.05 (measured 0.012 .. 0.037), Q4_0 0.5 (0.24 .. 0.43).
//     These tiny random models have small logits, so the relative gaps are large.
//   - Those run on the CPU's reference path (F32 activations); the served integer
//     path is bounded against it below.
//   - CUDA: the same comparisons, with the sequence fed both as one prefill step
//     (T = 5, 16, 40: the small-T and the large-T matmul paths) and token by token
//     (decode rows). F32 weights: kCudaF32Tolerance = 1e-4, the op-parity bound of
//     F32 matmul and attention (cuBLAS SGEMM, no TF32; ~1e-6 expected, as on the
//     CPU). Quantized weights: kCudaQuantTolerance = 2e-2, because for T > 8 the
//     GPU may dequantize the weights to F16 and round x to F16 for tensor-core
//     GEMMs: 2^-11 relative per operand, about a tenth of Q8_0's own rounding
//     (~2^-8 of the block maximum), whose whole effect on these logits is the
//     measured q8_0 gap of 0.012 .. 0.037; so ~4e-3 expected, 2e-2 allowed. The
//     distance to the f32 reference must stay within gap + 2 * that tolerance.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "tests/unit/backends/backend_test_util.h"
#include "tests/unit/engine/models/model_fixture.h"

namespace sluice::engine::testing::unit_engine_models_test_model_parity {
namespace {

constexpr double kF32Tolerance = 1e-5;    // the brief asks < 1e-4; measured ~1e-6
constexpr double kTightTolerance = 1e-5;
constexpr double kCudaF32Tolerance = 1e-4;
constexpr double kCudaQuantTolerance = 2e-2;
constexpr double kInt8Tolerance = 5e-2;
const std::map<std::string, double> kQuantizationCeiling = {{"q8_0", 0.05}, {"q4_0", 0.5}};

struct ParityBounds {
  double f32;        // F32 weights (safetensors, GGUF f32) vs the float32 reference
  double quantized;  // quantized GGUF vs the reference run on the dequantized weights
};

// Every fixture in every format on `backend`; `chunks` are the step sizes the
// sequences are fed in (0: the whole sequence in one step).
void check_fixture_parity(backends::Backend& backend, const ParityBounds& bounds, const std::vector<size_t>& chunks) {
  for (const std::string& name : kFixtureNames) {
    const ModelFixture fixture = load_fixture(name);
    for (const std::string format : {"safetensors", "f32", "q8_0", "q4_0"}) {
      CAPTURE(name);
      CAPTURE(format);
      ModelRunner runner(open_fixture_weights(fixture, format), backend);
      const std::string variant = format == "safetensors" ? "f32" : format;
      const double tolerance = variant == "f32" ? bounds.f32 : bounds.quantized;
      double worst = 0.0, worst_vs_f32 = 0.0, worst_gap = 0.0;
      for (const auto& seq : fixture.sequences) {
        for (size_t chunk : chunks) {
          CAPTURE(chunk);
          const std::vector<float> ours = runner.run(seq.tokens, chunk == 0 ? seq.tokens.size() : chunk);
          const std::vector<float>& ref = seq.logits.at(variant);
          const double error = max_relative_error(ours, ref, fixture.vocab_size);
          CHECK(error < tolerance);
          worst = std::max(worst, error);
          if (variant == "f32") continue;

          const std::vector<float>& f32 = seq.logits.at("f32");
          const double vs_f32 = max_relative_error(ours, f32, fixture.vocab_size);
          const double gap = max_relative_error(ref, f32, fixture.vocab_size);
          CHECK(gap < kQuantizationCeiling.at(variant));
          CHECK(vs_f32 <= gap + 2 * tolerance);
          worst_vs_f32 = std::max(worst_vs_f32, vs_f32);
          worst_gap = std::max(worst_gap, gap);
        }
      }
      if (variant == "f32") {
        MESSAGE(backend.name() << " " << name << " " << format << ": max relative error vs f32 reference " << worst);
      } else {
        MESSAGE(backend.name() << " " << name << " " << format << ": vs dequantized reference " << worst
                               << "; vs f32 " << worst_vs_f32 << " (reference's own quantization gap " << worst_gap
                               << ")");
      }
    }
  }
}

TEST_CASE("every fixture model matches its transformers reference logits") {
  auto cpu = backends::make_reference_cpu_backend(2);
  check_fixture_parity(*cpu, {kF32Tolerance, kTightTolerance}, {0});
}

// The served CPU path quantizes activations to int8 blocks for quantized weights
// (F32 weights take the reference path, so those logits are bit-identical). Its
// logits against the reference path's, fed whole and token by token: max relative
// error below kInt8Tolerance. These random fixtures have small, flat logits, so a
// relative error is large here: measured 0.008 .. 0.03 (what activation rounding
// alone costs: the real models' greedy tokens match, test_model_greedy.cpp).
TEST_CASE("every fixture model on the integer kernels stays within activation rounding of the reference") {
  auto reference = backends::make_reference_cpu_backend(2);
  auto served = backends::make_cpu_backend(2);
  double worst = 0.0;
  for (const std::string& name : kFixtureNames) {
    const ModelFixture fixture = load_fixture(name);
    for (const std::string format : {"safetensors", "f32", "q8_0", "q4_0"}) {
      CAPTURE(name);
      CAPTURE(format);
      ModelRunner exact(open_fixture_weights(fixture, format), *reference);
      ModelRunner fast(open_fixture_weights(fixture, format), *served);
      for (const auto& seq : fixture.sequences) {
        for (size_t chunk : {size_t{0}, size_t{1}}) {
          const size_t step = chunk == 0 ? seq.tokens.size() : chunk;
          const std::vector<float> want = exact.run(seq.tokens, step);
          const std::vector<float> got = fast.run(seq.tokens, step);
          if (format == "safetensors" || format == "f32") {
            CHECK(want == got);
            continue;
          }
          const double error = max_relative_error(got, want, fixture.vocab_size);
          CHECK(error < kInt8Tolerance);
          worst = std::max(worst, error);
        }
      }
    }
  }
  MESSAGE("integer kernels vs reference path: worst relative logit error " << worst);
}

// Quantization at load: each fixture's F32 safetensors quantized to Q8_0 / Q4_0 as
// it loads holds the same blocks as the GGUF of that type (the reference rounding,
// token_embd at Q8_0 in both), so its logits match the reference run on the
// dequantized weights within kTightTolerance; against the unquantized f32
// reference they are within the reference's own quantization gap (+ 2 x tight).
TEST_CASE("safetensors quantized at load match the quantized references") {
  auto cpu = backends::make_reference_cpu_backend(2);
  for (const std::string& name : kFixtureNames) {
    const ModelFixture fixture = load_fixture(name);
    for (const auto& [variant, dtype] : {std::pair{"q8_0", backends::DType::Q8_0}, {"q4_0", backends::DType::Q4_0}}) {
      CAPTURE(name);
      CAPTURE(variant);
      ModelRunner runner(open_fixture_weights(fixture, "safetensors"), *cpu, backends::DType::F32, dtype);
      double worst = 0.0, worst_vs_f32 = 0.0;
      for (const auto& seq : fixture.sequences) {
        const std::vector<float> ours = runner.run(seq.tokens, seq.tokens.size());
        const double error = max_relative_error(ours, seq.logits.at(variant), fixture.vocab_size);
        const double vs_f32 = max_relative_error(ours, seq.logits.at("f32"), fixture.vocab_size);
        const double gap = max_relative_error(seq.logits.at(variant), seq.logits.at("f32"), fixture.vocab_size);
        CHECK(error < kTightTolerance);
        CHECK(vs_f32 <= gap + 2 * kTightTolerance);
        worst = std::max(worst, error);
        worst_vs_f32 = std::max(worst_vs_f32, vs_f32);
      }
      MESSAGE(name << " safetensors quantized to " << std::string(variant) << " at load: vs dequantized reference " << worst
                   << "; vs f32 " << worst_vs_f32);
    }
  }
}

TEST_CASE("every fixture model matches its transformers reference logits on CUDA") {
  auto gpu = backends::test::cuda_backend_or_skip("CUDA model parity");
  if (!gpu) return;
  check_fixture_parity(*gpu, {kCudaF32Tolerance, kCudaQuantTolerance}, {0, 1});
}

}  // namespace
}  // namespace sluice::engine::testing
