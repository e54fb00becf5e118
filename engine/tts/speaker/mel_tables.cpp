#include "engine/tts/speaker/mel_tables.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace sluice::engine::tts {
namespace {

// librosa's Slaney mel scale: linear below 1 kHz (200/3 Hz per mel), logarithmic
// above (27 mels per factor 6.4). Everything in double, as numpy computes it.
constexpr double kMelLinearHz = 200.0 / 3;
constexpr double kMinLogHz = 1000.0;
constexpr double kMinLogMel = kMinLogHz / kMelLinearHz;

double log_step() { return std::log(6.4) / 27.0; }

double hz_to_mel(double hz) {
  if (hz >= kMinLogHz) return kMinLogMel + std::log(hz / kMinLogHz) / log_step();
  return hz / kMelLinearHz;
}

double mel_to_hz(double mel) {
  if (mel >= kMinLogMel) return kMinLogHz * std::exp(log_step() * (mel - kMinLogMel));
  return kMelLinearHz * mel;
}

}  // namespace

std::vector<float> hann_window(int64_t n_fft) {
  std::vector<float> w(static_cast<size_t>(n_fft));
  for (int64_t n = 0; n < n_fft; ++n)
    w[static_cast<size_t>(n)] =
        static_cast<float>(0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * static_cast<double>(n) / static_cast<double>(n_fft)));
  return w;
}

std::vector<float> dft_basis(const MelSpec& spec) {
  if (spec.n_fft <= 0 || spec.hop <= 0 || spec.n_fft % spec.hop != 0)
    throw std::invalid_argument("dft_basis: n_fft must be a positive multiple of hop");
  const int64_t n = spec.n_fft, bins = spec.num_bins();
  const std::vector<float> window = hann_window(n);
  std::vector<float> basis(static_cast<size_t>(2 * bins * n));
  for (int64_t k = 0; k < bins; ++k) {
    for (int64_t i = 0; i < n; ++i) {
      // k * i mod n keeps the angle in [0, 2 pi): the table is exact to double's
      // rounding whatever the bin.
      const double angle = 2.0 * std::numbers::pi * static_cast<double>((k * i) % n) / static_cast<double>(n);
      const double w = window[static_cast<size_t>(i)];
      basis[static_cast<size_t>(k * n + i)] = static_cast<float>(w * std::cos(angle));
      basis[static_cast<size_t>((bins + k) * n + i)] = static_cast<float>(-w * std::sin(angle));
    }
  }
  return basis;
}

std::vector<float> slaney_mel_filterbank(const MelSpec& spec) {
  const int64_t bins = spec.num_bins(), mels = spec.num_mels;
  // np.fft.rfftfreq(n_fft, d=1/sr): i * (1 / (n_fft * d)).
  const double bin_hz = 1.0 / (static_cast<double>(spec.n_fft) * (1.0 / spec.sample_rate));
  // mel_frequencies(n_mels + 2): np.linspace over the mel range (i * step + start,
  // the last point exactly the end), back to Hz.
  const double lo = hz_to_mel(spec.fmin), hi = hz_to_mel(spec.fmax);
  const int64_t points = mels + 2;
  const double step = (hi - lo) / static_cast<double>(points - 1);
  std::vector<double> mel_hz(static_cast<size_t>(points));
  for (int64_t i = 0; i < points; ++i)
    mel_hz[static_cast<size_t>(i)] = mel_to_hz(i + 1 == points ? hi : static_cast<double>(i) * step + lo);

  std::vector<float> weights(static_cast<size_t>(mels * bins));
  for (int64_t m = 0; m < mels; ++m) {
    const double left = mel_hz[static_cast<size_t>(m)], center = mel_hz[static_cast<size_t>(m + 1)],
                 right = mel_hz[static_cast<size_t>(m + 2)];
    const double rise = center - left, fall = right - center;
    const double area = 2.0 / (right - left);
    for (int64_t b = 0; b < bins; ++b) {
      const double hz = static_cast<double>(b) * bin_hz;
      const double lower = -(left - hz) / rise, upper = (right - hz) / fall;
      const float triangle = static_cast<float>(std::max(0.0, std::min(lower, upper)));
      weights[static_cast<size_t>(m * bins + b)] = static_cast<float>(static_cast<double>(triangle) * area);
    }
  }
  return weights;
}

}  // namespace sluice::engine::tts
