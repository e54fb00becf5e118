// Op parity of the CUDA backend's signal ops (activate, clamp, add_bias, snake,
// conv1d, depthwise_conv1d, conv_transpose1d) against the CPU backend, on the
// cases of signal_ops_cases.h plus the codec's channel counts. Skips (MESSAGE)
// without CUDA or a device, like the other parity tests.
// Tolerances:
//   every output against backend.h's formula in double: the CPU's bound
//     (signal_ops_cases.h) for the element-wise ops (CUDA's expf / erff / sinf are
//     full precision, a few ulp like libm's), clamp and add_bias exactly; for the
//     convolutions the bound of the GPU's order, one sequential fmaf chain over
//     taps * Cin products: (taps * Cin + 8) * 2^-24 * (sum |w x| + |bias|);
//   GPU against CPU: normalized error (max |gpu - cpu| / max(1, max |cpu|)) 1e-5
//     (both are ~1e-7 from exact on these sizes; a wrong tap, phase or channel
//     is off by O(1));
//   chunked streaming on the GPU equals its whole call bit for bit (each output is
//     a fixed chain over its own window there too).
#include <doctest/doctest.h>

#include <random>
#include <vector>

#include "tests/unit/backends/cpu/cpu_test_util.h"
#include "tests/unit/backends/cuda/cuda_parity_util.h"
#include "tests/unit/backends/signal_ops_cases.h"

namespace sluice::backends::test::unit_backends_cuda_test_cuda_parity_signal {

TEST_CASE("cuda parity: signal ops against the formula in double and the CPU backend") {
  Backends b = backends_or_skip();
  if (!b) return;
  std::mt19937 rng(21);
  std::vector<SignalCase> cases = signal_test_cases(rng);
  // The codec's channel counts (multiples of 16, full shared-memory tiles).
  cases.push_back(make_signal_case(SignalKind::conv1d, 96, 96, 7, 9, true, rng));
  cases.push_back(make_signal_case(SignalKind::conv1d, 192, 70, 1, 1, true, rng));
  cases.push_back(make_signal_case(SignalKind::conv_transpose, 192, 96, 2, 3, true, rng));
  cases.push_back(make_signal_case(SignalKind::depthwise, 1024, 1024, 7, 1, true, rng));
  cases.push_back(make_signal_case(SignalKind::snake, 384, 384, 1, 1, false, rng));
  for (const SignalCase& c : cases) {
    for (int64_t steps : {1, 5, 37, 130}) {
      CAPTURE(c.describe());
      CAPTURE(steps);
      const std::vector<float> x = random_signal_input(c, steps, rng);
      SignalReference ref = signal_reference(c, x, steps);
      if (!c.is_elementwise() && c.kind != SignalKind::depthwise) {
        // The CPU's bound counts lane steps; the GPU's chain has one rounding per product.
        const double cpu_rounds = double(c.taps * ((c.cin + 15) / 16) + 8), gpu_rounds = double(c.taps * c.cin + 8);
        for (double& bound : ref.bound) bound *= gpu_rounds / cpu_rounds;
      }
      const std::vector<float> gpu = run_signal(*b.gpu, c, x, steps, 2);
      CHECK(signal_misses(gpu, ref) == 0);
      CHECK(normalized_error(gpu, run_signal(*b.cpu, c, x, steps)) <= 1e-5);
      if (steps == 37) CHECK(bits_equal(run_signal_chunked(*b.gpu, c, x, steps, {4, 7, 1, 3, 5}), gpu));
    }
  }
}

TEST_CASE("cuda parity: element-wise signal ops in place equal out of place") {
  Backends b = backends_or_skip();
  if (!b) return;
  std::mt19937 rng(22);
  for (const SignalCase& c : signal_test_cases(rng)) {
    if (!c.is_elementwise()) continue;
    CAPTURE(c.describe());
    const std::vector<float> x = random_signal_input(c, 37, rng);
    CHECK(bits_equal(run_signal(*b.gpu, c, x, 37, 0, true), run_signal(*b.gpu, c, x, 37)));
  }
}

}  // namespace sluice::backends::test
