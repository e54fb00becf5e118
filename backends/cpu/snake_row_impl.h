#pragma once
// snake_row.h's row, included by one translation unit per ISA (flags in
// backends/CMakeLists.txt). Internal linkage, so the per-ISA copies never merge.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backends/cpu/snake_row.h"

namespace sluice::backends::cpu {
namespace {

// sin(y)^2 for |y| <= kSinSquaredLimit, written to vectorize (SnakeBeta calls it
// for every element of the decoder's activations: millions per frame, where a
// libm sinf per element cost more than the convolutions around it). y is reduced
// by pi/2 (three-part split whose first two parts have 12 significant bits, so
// k * part is exact for |k| < 2^12), then sin or cos of the remainder (|r| <= pi/4)
// by Taylor series to the r^9 / r^10 terms (truncation < 2^-27), the quadrant's
// parity picking which one is squared. Within 1.5e-7 of sin^2 of the F32 angle
// (a few ulp of libm's). The same bits on every path (IEEE operations only, no contraction).
constexpr float kSinSquaredLimit = 4096.0f;
inline float sin_squared(float y) {
  constexpr float kTwoOverPi = 0x1.45f306p-1f, kRoundToInt = 0x1.8p23f;
  constexpr float kPio2a = 0x1.92p+0f, kPio2b = 0x1.fb4p-12f, kPio2c = 0x1.4442d2p-24f;
  const float k = (y * kTwoOverPi + kRoundToInt) - kRoundToInt;  // nearest integer, ties to even
  const float r = ((y - k * kPio2a) - k * kPio2b) - k * kPio2c;
  const float r2 = r * r;
  const float s = r + r * r2 * (-1.0f / 6 + r2 * (1.0f / 120 + r2 * (-1.0f / 5040 + r2 * (1.0f / 362880))));
  const float c =
      1.0f + r2 * (-0.5f + r2 * (1.0f / 24 + r2 * (-1.0f / 720 + r2 * (1.0f / 40320 + r2 * (-1.0f / 3628800)))));
  // The parity as 0 or 1 selects by exact products: no branch, so the loop vectorizes.
  const float odd = static_cast<float>(static_cast<int32_t>(k) & 1);
  return odd * (c * c) + (1.0f - odd) * (s * s);
}

void snake_row_impl(const float* x, const float* a, const float* ib, float* y, int64_t n) {
  // A row with an angle beyond the fast range takes the branchy loop; each
  // element's value is the same either way.
  int64_t num_large = 0;
  for (int64_t c = 0; c < n; ++c) num_large += !(std::fabs(a[c] * x[c]) <= kSinSquaredLimit);
  if (num_large == 0) {
    // Through a local block: y may alias x (the decoder runs it in place), and a
    // store that may overlap the loads keeps the compiler from vectorizing.
    constexpr int64_t kBlock = 64;
    float block[kBlock];
    for (int64_t c0 = 0; c0 < n; c0 += kBlock) {
      const int64_t m = n - c0 < kBlock ? n - c0 : kBlock;
      const float *xb = x + c0, *ab = a + c0, *ibb = ib + c0;
      for (int64_t c = 0; c < m; ++c) block[c] = xb[c] + ibb[c] * sin_squared(ab[c] * xb[c]);
      std::memcpy(y + c0, block, static_cast<size_t>(m) * sizeof(float));
    }
    return;
  }
  for (int64_t c = 0; c < n; ++c) {
    const float angle = a[c] * x[c];
    float s2;
    if (std::fabs(angle) <= kSinSquaredLimit) {
      s2 = sin_squared(angle);
    } else {
      const float s = std::sin(angle);
      s2 = s * s;
    }
    y[c] = x[c] + ib[c] * s2;
  }
}

}  // namespace
}  // namespace sluice::backends::cpu
