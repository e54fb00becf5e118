#include "engine/loader/rope_freqs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

namespace sluice::loader::detail {
namespace {

constexpr double kTolerance = 1e-4;  // relative; F32 factors carry ~1e-7

// 1 / wavelength of pair i: the variable the Llama 3 smoothing is linear in.
double inverse_wavelength(const backends::RopeParams& rope, size_t i) {
  const double inv_freq =
      std::pow(static_cast<double>(rope.theta), -2.0 * static_cast<double>(i) / rope.num_rotated);
  return inv_freq / (2.0 * std::numbers::pi);
}

}  // namespace

std::vector<double> llama3_factors(const backends::RopeParams& rope) {
  const size_t num_pairs = static_cast<size_t>(std::max(rope.num_rotated, 0) / 2);
  std::vector<double> out(num_pairs, 1.0);
  if (rope.llama3_factor == 0.0f) return out;
  const double factor = rope.llama3_factor;
  const double low = rope.llama3_low_freq_factor;
  const double high = rope.llama3_high_freq_factor;
  const double context = rope.llama3_original_context;
  for (size_t i = 0; i < num_pairs; ++i) {
    const double x = inverse_wavelength(rope, i);
    const double smooth = std::clamp((context * x - low) / (high - low), 0.0, 1.0);
    out[i] = 1.0 / ((1.0 - smooth) / factor + smooth);
  }
  return out;
}

std::optional<std::string> set_llama3_from_factors(backends::RopeParams& rope,
                                                   std::span<const float> factors) {
  if (rope.num_rotated <= 0 || factors.size() != static_cast<size_t>(rope.num_rotated / 2))
    return "has " + std::to_string(factors.size()) + " elements, expected " +
           std::to_string(rope.num_rotated / 2) + " (rope dimensions / 2)";
  double factor = 0.0;
  for (float f : factors) {
    if (!std::isfinite(f) || f < 1.0f - kTolerance) return "has a factor below 1 or not finite";
    factor = std::max(factor, static_cast<double>(f));
  }
  if (factor <= 1.0 + kTolerance) {
    rope.llama3_factor = 0.0f;
    return std::nullopt;
  }

  // smooth(x) = a * x + b, clamped to [0, 1]; factor at smooth 0, 1 at smooth 1.
  std::vector<std::pair<double, double>> medium;  // (x, smooth)
  double x_low_max = 0.0;                          // the highest "low" frequency
  double x_high_min = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < factors.size(); ++i) {
    const double x = inverse_wavelength(rope, i);
    const double f = factors[i];
    if (f <= 1.0 + kTolerance) {
      x_high_min = std::min(x_high_min, x);
    } else if (f >= factor * (1.0 - kTolerance)) {
      x_low_max = std::max(x_low_max, x);
    } else {
      medium.emplace_back(x, (1.0 / f - 1.0 / factor) / (1.0 - 1.0 / factor));
    }
  }
  double a = 0.0;
  double b = 0.0;
  if (medium.size() >= 2) {
    // Least squares through the medium points.
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (auto [x, y] : medium) {
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double n = static_cast<double>(medium.size());
    a = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    b = (sy - a * sx) / n;
  } else if (medium.size() == 1) {
    // Any line through the point that reaches 0 by the low side and 1 by the high side.
    const auto [xm, sm] = medium.front();
    a = sm / (xm - x_low_max);
    if (std::isfinite(x_high_min)) a = std::max(a, (1.0 - sm) / (x_high_min - xm));
    b = sm - a * xm;
  } else {
    const double x1 = std::isfinite(x_high_min) ? x_high_min : 2.0 * inverse_wavelength(rope, 0);
    a = 1.0 / (x1 - x_low_max);
    b = -a * x_low_max;
  }
  if (!(a > 0.0) || !(b < 0.0) || !std::isfinite(a) || !std::isfinite(b))
    return "does not follow Llama 3 frequency scaling";

  // a = context / (high - low), b = -low / (high - low): pick an integer context.
  const double context = std::max(1.0, std::round(-a / b));
  const double span = context / a;
  rope.llama3_factor = static_cast<float>(factor);
  rope.llama3_original_context = static_cast<int>(std::min(context, 1e9));
  rope.llama3_low_freq_factor = static_cast<float>(-b * span);
  rope.llama3_high_freq_factor = static_cast<float>(-b * span + span);

  const std::vector<double> rebuilt = llama3_factors(rope);
  for (size_t i = 0; i < factors.size(); ++i) {
    if (std::abs(rebuilt[i] - factors[i]) > 1e-3 * factors[i]) {
      rope.llama3_factor = 0.0f;
      return "does not follow Llama 3 frequency scaling (pair " + std::to_string(i) + ": " +
             std::to_string(factors[i]) + ", the closest fit gives " + std::to_string(rebuilt[i]) +
             ")";
    }
  }
  return std::nullopt;
}

}  // namespace sluice::loader::detail
