// The CPU backend's int16 convolutions (backends/conv_int16.h: weights per output
// column, activations per input row, exact int32 tap sums):
//  - against backend.h's formula in double on the F32 weights: SNR >= 55 dB per
//    case (the codec's channel counts included, where the bounds leave 1182 levels
//    a side at Cin 1536; uniform data measures ~63 dB there);
//  - every path gives the scalar path's bits, and chunked streaming equals one
//    whole call bit for bit on every path and thread count, as for F32.
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

namespace sluice::backends::test::unit_backends_test_signal_ops_int16 {
namespace {

std::vector<SignalCase> int16_cases(std::mt19937& rng) {
  std::vector<SignalCase> cases;
  for (const SignalCase& c : signal_test_cases(rng))
    if (c.kind == SignalKind::conv1d || c.kind == SignalKind::conv_transpose) cases.push_back(c);
  // The codec decoder's channel counts (fewer output columns, to stay quick).
  for (int64_t cin : {96, 192, 384, 768})
    for (int dilation : {1, 9}) cases.push_back(make_signal_case(SignalKind::conv1d, cin, 6, 7, dilation, true, rng));
  cases.push_back(make_signal_case(SignalKind::conv1d, 1024, 5, 7, 1, true, rng));
  cases.push_back(make_signal_case(SignalKind::conv1d, 96, 1, 7, 1, true, rng));
  cases.push_back(make_signal_case(SignalKind::conv_transpose, 1536, 3, 2, 8, true, rng));
  for (SignalCase& c : cases) c.conv_weights = ConvWeightForm::int16;
  return cases;
}

double snr_db(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  double signal = 0, noise = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    signal += want[i] * want[i];
    noise += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
  }
  return 10.0 * std::log10(signal / std::max(noise, 1e-300));
}

}  // namespace

TEST_CASE("signal ops int16: convs within 55 dB SNR of backend.h's formula on the F32 weights, every path") {
  std::mt19937 rng(21);
  const auto backends = backends_of_every_path(2);
  double worst = 1e9;
  for (const SignalCase& c : int16_cases(rng)) {
    CAPTURE(c.describe());
    const int64_t steps = 23;
    const std::vector<float> x = random_signal_input(c, steps, rng);
    const SignalReference ref = signal_reference(c, x, steps);
    for (const auto& backend : backends) {
      CAPTURE(backend->kernel_path());
      const double snr = snr_db(run_signal(*backend, c, x, steps), ref.value);
      worst = std::min(worst, snr);
      CHECK(snr >= 55.0);
    }
  }
  MESSAGE("int16 convs: worst SNR " << worst << " dB");
}

TEST_CASE("signal ops int16: every path gives the same bits, and chunked streaming equals one whole call") {
  std::mt19937 rng(22);
  check_paths_and_streaming(int16_cases(rng), rng, true);
}

}  // namespace sluice::backends::test
