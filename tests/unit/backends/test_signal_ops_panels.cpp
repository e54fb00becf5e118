// The CPU backend's convolutions with conv_panels.h's F32 panel weights (the
// codec decoder's form on the CPU; backends/cpu/conv_panel_kernel.h):
//  - every output bit for bit the header's definition, one FMA chain over k,
//    computed here in scalar code, on every kernel path;
//  - every path gives the scalar path's bits, and chunked streaming equals one
//    whole call bit for bit on every path and thread count;
//  - within backend.h's formula's F32 error bound (signal_ops_cases.h), as the
//    row-dot tile is.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/quant/cpu_features.h"
#include "tests/unit/backends/cpu/cpu_test_util.h"
#include "tests/unit/backends/cpu_signal_checks.h"
#include "tests/unit/backends/signal_ops_cases.h"

namespace sluice::backends::test::unit_backends_test_signal_ops_panels {
namespace {

// Panels need an even Cin. Column counts off multiples of 16 (partial panels) and
// transposed convs whose phases straddle panels, plus whole panels at the
// codec's channel counts (the vector store).
std::vector<SignalCase> panel_cases(std::mt19937& rng) {
  std::vector<SignalCase> cases;
  for (bool bias : {false, true}) {
    for (int dilation : {1, 3, 9}) {
      cases.push_back(make_signal_case(SignalKind::conv1d, 2, 5, 7, dilation, bias, rng));
      cases.push_back(make_signal_case(SignalKind::conv1d, 38, 19, 3, dilation, bias, rng));
    }
    cases.push_back(make_signal_case(SignalKind::conv1d, 100, 33, 1, 1, bias, rng));
    cases.push_back(make_signal_case(SignalKind::conv1d, 48, 13, 2, 2, bias, rng));
    for (int stride : {2, 3, 4, 5, 8}) cases.push_back(make_signal_case(SignalKind::conv_transpose, 22, 11, 2, stride, bias, rng));
    cases.push_back(make_signal_case(SignalKind::conv_transpose, 34, 6, 1, 2, bias, rng));
  }
  cases.push_back(make_signal_case(SignalKind::conv1d, 96, 96, 7, 9, true, rng));
  cases.push_back(make_signal_case(SignalKind::conv1d, 384, 40, 7, 3, true, rng));
  cases.push_back(make_signal_case(SignalKind::conv1d, 1024, 48, 7, 1, true, rng));
  cases.push_back(make_signal_case(SignalKind::conv_transpose, 192, 96, 2, 3, true, rng));
  for (SignalCase& c : cases) c.conv_weights = ConvWeightForm::panels;
  return cases;
}

// conv_panel_kernel.h's definition in scalar code: one fma chain per output over
// k = tap * cin + channel.
std::vector<float> panel_chain(const SignalCase& c, const std::vector<float>& x, int64_t steps) {
  const bool transposed = c.kind == SignalKind::conv_transpose;
  const int64_t s = transposed ? c.param : 1, step = transposed ? 1 : c.param, columns = s * c.cout;
  const int64_t k = c.taps * c.cin;
  std::vector<float> out(static_cast<size_t>(steps * s * c.cout));
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t col = 0; col < columns; ++col) {
      float acc = 0.0f;
      for (int64_t i = 0; i < k; ++i) {
        const int64_t j = i / c.cin, ch = i % c.cin;
        acc = std::fma(x[static_cast<size_t>((t + j * step) * c.cin + ch)], c.w[static_cast<size_t>(col * k + i)], acc);
      }
      const int64_t phase = col / c.cout, o = col % c.cout;
      if (c.has_bias) acc += c.bias[static_cast<size_t>(o)];
      out[static_cast<size_t>((t * s + phase) * c.cout + o)] = acc;
    }
  return out;
}

}  // namespace

TEST_CASE("signal ops panels: every path computes conv_panel_kernel.h's chain bit for bit; streaming equals whole") {
  std::mt19937 rng(24);
  const std::vector<SignalCase> cases = panel_cases(rng);
  const auto backends = backends_of_every_path(2);
  for (const SignalCase& c : cases) {
    CAPTURE(c.describe());
    const int64_t steps = 29;
    const std::vector<float> x = random_signal_input(c, steps, rng);
    const std::vector<float> want = panel_chain(c, x, steps);
    for (const auto& backend : backends) {
      CAPTURE(backend->kernel_path());
      CHECK(bits_equal(run_signal(*backend, c, x, steps), want));
    }
  }
  check_paths_and_streaming(cases, rng, true);
}

TEST_CASE("signal ops panels: within backend.h's formula's F32 error bound, every path") {
  std::mt19937 rng(25);
  const auto backends = backends_of_every_path(2);
  for (const SignalCase& c : panel_cases(rng)) {
    CAPTURE(c.describe());
    const int64_t steps = 23;
    const std::vector<float> x = random_signal_input(c, steps, rng);
    const SignalReference ref = signal_reference(c, x, steps);
    for (const auto& backend : backends) {
      CAPTURE(backend->kernel_path());
      const std::vector<float> got = run_signal(*backend, c, x, steps);
      for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(double(got[i]) - ref.value[i]) <= ref.bound[i]);
    }
  }
}

}  // namespace sluice::backends::test
