// The CPU backend's signal ops (backend.h) on every kernel path this CPU runs:
//  - against backend.h's formulas in double (signal_ops_cases.h): element-wise ops
//    within ~1e-6 relative (libm's expf/erff/sinf), clamp and add_bias exactly, the
//    convolutions within (taps * ceil(Cin/16) + 8) * 2^-24 * (sum |w x| + |bias|),
//    the F32 rounding bound of conv_kernel.h's fused 16-lane summation;
//  - conv_transpose1d against a scatter-form transposed convolution of a PyTorch
//    [Cin, Cout, K] weight with the trailing K - s outputs trimmed, repacked as
//    backend.h documents;
//  - the streaming invariant: every op computed in chunks (each fed its left-context
//    rows) equals one whole call bit for bit, on every path and thread count;
//  - every path equals the scalar path bit for bit;
//  - snake at angles past its fast sine's range (|alpha x| > 4096) against libm's
//    sin of the same F32 angle: within 2^-23 |x| (the final add) + 1e-6 inv_beta.
#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/quant/cpu_features.h"
#include "tests/unit/backends/cpu/cpu_test_util.h"
#include "tests/unit/backends/cpu_signal_checks.h"
#include "tests/unit/backends/signal_ops_cases.h"

namespace sluice::backends::test::unit_backends_test_signal_ops {

TEST_CASE("signal ops: every op on every CPU path matches backend.h's formula in double") {
  std::mt19937 rng(11);
  const auto backends = backends_of_every_path(2);
  MESSAGE("signal op paths: " << backends.size());
  for (const SignalCase& c : signal_test_cases(rng)) {
    for (int64_t steps : {1, 2, 5, 37}) {
      CAPTURE(c.describe());
      CAPTURE(steps);
      const std::vector<float> x = random_signal_input(c, steps, rng);
      const SignalReference ref = signal_reference(c, x, steps);
      for (const auto& backend : backends) {
        CAPTURE(backend->kernel_path());
        CHECK(signal_misses(run_signal(*backend, c, x, steps), ref) == 0);
        // Strided rows: the same values, the padding untouched (checked in run_signal).
        CHECK(bits_equal(run_signal(*backend, c, x, steps, 3), run_signal(*backend, c, x, steps)));
      }
    }
  }
}

TEST_CASE("signal ops: element-wise ops computed in place equal out of place") {
  std::mt19937 rng(12);
  cpu::CpuBackend backend(2, cpu::active_kernel_path());
  for (const SignalCase& c : signal_test_cases(rng)) {
    if (!c.is_elementwise()) continue;
    CAPTURE(c.describe());
    const std::vector<float> x = random_signal_input(c, 37, rng);
    CHECK(bits_equal(run_signal(backend, c, x, 37, 0, true), run_signal(backend, c, x, 37)));
  }
}

TEST_CASE("signal ops: chunked streaming equals one whole call bit for bit, on every path and thread count") {
  std::mt19937 rng(13);
  check_paths_and_streaming(signal_test_cases(rng), rng, false);
}

TEST_CASE("signal ops: conv_transpose1d is PyTorch's transposed conv, trailing K - s trimmed, after the repack") {
  // Scatter form on a PyTorch weight W [Cin, Cout, K]: input row i adds
  // W[c, o, k] * x[i, c] to full output row i*s + k; the causal op keeps rows
  // [0, N*s) of the full output. With m - 1 leading context rows, the op's T*s
  // outputs are full rows [(m-1)*s, (T+m-1)*s).
  std::mt19937 rng(14);
  const auto backends = backends_of_every_path(2);
  struct Shape { int64_t cin, cout; int stride, m; };
  for (const Shape& s : {Shape{21, 11, 8, 2}, Shape{19, 7, 5, 2}, Shape{40, 3, 4, 2}, Shape{5, 9, 3, 2},
                         Shape{33, 17, 2, 1}, Shape{6, 5, 3, 3}}) {
    CAPTURE(s.cin);
    CAPTURE(s.cout);
    CAPTURE(s.stride);
    const int64_t k_full = int64_t(s.m) * s.stride, frames = 9, in_rows = frames + s.m - 1;
    const std::vector<float> torch_w = random_floats(rng, size_t(s.cin * s.cout * k_full));
    auto W = [&](int64_t c, int64_t o, int64_t k) { return double(torch_w[size_t((c * s.cout + o) * k_full + k)]); };
    SignalCase c = make_signal_case(SignalKind::conv_transpose, s.cin, s.cout, s.m, s.stride, true, rng);
    for (int64_t r = 0; r < s.stride; ++r)
      for (int64_t o = 0; o < s.cout; ++o)
        for (int64_t q = 0; q < s.m; ++q)
          for (int64_t ch = 0; ch < s.cin; ++ch)
            c.w[size_t((r * s.cout + o) * s.m * s.cin + q * s.cin + ch)] = float(W(ch, o, r + (s.m - 1 - q) * s.stride));
    const std::vector<float> x = random_floats(rng, size_t(in_rows * s.cin));
    const int64_t full_rows = (in_rows - 1) * s.stride + k_full;
    std::vector<double> full(size_t(full_rows * s.cout)), full_abs(size_t(full_rows * s.cout));
    for (int64_t i = 0; i < in_rows; ++i)
      for (int64_t ch = 0; ch < s.cin; ++ch)
        for (int64_t o = 0; o < s.cout; ++o)
          for (int64_t k = 0; k < k_full; ++k) {
            const double p = W(ch, o, k) * x[size_t(i * s.cin + ch)];
            full[size_t((i * s.stride + k) * s.cout + o)] += p;
            full_abs[size_t((i * s.stride + k) * s.cout + o)] += std::fabs(p);
          }
    SignalReference ref;
    for (int64_t row = (s.m - 1) * s.stride; row < in_rows * s.stride; ++row)
      for (int64_t o = 0; o < s.cout; ++o) {
        const size_t at = size_t(row * s.cout + o);
        ref.value.push_back(full[at] + c.bias[size_t(o)]);
        ref.bound.push_back(double(s.m * ((s.cin + 15) / 16) + 8) * std::ldexp(1.0, -24) *
                                (full_abs[at] + std::fabs(c.bias[size_t(o)])) + 1e-30);
      }
    for (const auto& backend : backends) {
      CAPTURE(backend->kernel_path());
      CHECK(signal_misses(run_signal(*backend, c, x, frames), ref) == 0);
    }
  }
}

TEST_CASE("signal ops: snake is right at every angle, rows mixing small and huge ones included") {
  std::mt19937 rng(15);
  cpu::CpuBackend backend(2, cpu::active_kernel_path());
  SignalCase c = make_signal_case(SignalKind::snake, 40, 40, 1, 1, false, rng);
  const int64_t rows = 9;
  std::vector<float> x = random_floats(rng, size_t(rows * c.cin), -2.0f, 2.0f);
  // Rows 0-2 small angles only; rows 3-8 mix in magnitudes up to 1e5 (angles up to 3e5).
  std::uniform_real_distribution<float> huge(-1e5f, 1e5f);
  for (int64_t i = 3 * c.cin; i < rows * c.cin; i += 3) x[size_t(i)] = huge(rng);
  const std::vector<float> got = run_signal(backend, c, x, rows);
  int misses = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t ch = 0; ch < c.cin; ++ch) {
      const size_t i = size_t(r * c.cin + ch);
      const float angle = c.alpha[size_t(ch)] * x[i];
      const double s = std::sin(double(angle));
      const double want = double(x[i]) + double(c.inv_beta[size_t(ch)]) * s * s;
      const double tol = std::ldexp(std::fabs(double(x[i])), -23) + 1e-6 * c.inv_beta[size_t(ch)];
      if (!(std::fabs(got[i] - want) <= tol)) ++misses;
    }
  CHECK(misses == 0);
  CHECK(bits_equal(run_signal_chunked(backend, c, x, rows, {1, 2}), got));
}

}  // namespace sluice::backends::test
