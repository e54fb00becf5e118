#pragma once
// e^x for x <= 0 and the logistic function built on it, in plain float operations
// (no libm call, rounding by the 1.5 * 2^23 trick instead of nearbyint), so a loop
// over them vectorizes on any ISA, the SSE2 baseline included, and every lane gives
// the bits of the scalar code. Internal linkage on purpose: each per-ISA translation
// unit keeps its own copy, and the linker never swaps an AVX-512 one into another.
#include <bit>
#include <cmath>
#include <cstdint>

namespace sluice::backends::cpu {
namespace {

// To about 2 ulp: x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-6 Taylor
// polynomial, 2^n by building the exponent. NaN and x <= -87 give 0.
// Selects rather than an early return, so the compiler if-converts the loop.
inline float exp_nonpositive(float x) {
  const bool in_range = x > -87.0f;  // false for NaN
  x = in_range ? x : -87.0f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer, ties to even
  const float n = (x * 1.44269504f + kRound) - kRound;
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  return in_range ? p * std::bit_cast<float>(bits) : 0.0f;
}

// 1 / (1 + e^-z) for any z, from e^-|z| so nothing overflows; to a few ulp.
inline float logistic(float z) {
  const float e = exp_nonpositive(-std::fabs(z));
  const float r = 1.0f / (1.0f + e);
  return z >= 0.0f ? r : e * r;
}

}  // namespace
}  // namespace sluice::backends::cpu
