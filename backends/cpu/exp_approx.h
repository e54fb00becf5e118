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

// c0 r^n + c1 r^(n-1) + ... + cn by Horner's rule: p = p * r + c, one rounding each
// (no FMA: the translation units build with -ffp-contract=off).
template <class T, class... C>
inline T horner(T r, T c0, C... c) {
  T p = c0;
  ((p = p * r + c), ...);
  return p;
}

// To about 2 ulp: x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-6 Taylor
// polynomial, 2^n by building the exponent. NaN and x <= -87 give 0.
// Selects rather than an early return, so the compiler if-converts the loop.
inline float exp_nonpositive(float x) {
  const bool in_range = x > -87.0f;  // false for NaN
  x = in_range ? x : -87.0f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer, ties to even
  const float n = (x * 1.44269504f + kRound) - kRound;
  const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f;
  const float p = horner(r, 1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f);
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  return in_range ? p * std::bit_cast<float>(bits) : 0.0f;
}

// expf(v) with glibc's bits, computed in double (e^r by a degree-12 Taylor
// polynomial after v = k ln2 + r, |r| <= ln2 / 2) and rounded to float once. *exact
// is 0 where it might differ from glibc's expf: outside (-80, 88), at powers of two,
// and where the double result lies within 0.004 float ulp of a rounding midpoint
// (glibc's expf is documented within 0.502 ulp, so it rounds correctly everywhere
// else); the caller then asks libm. A run over every float found no difference;
// the unit tests sample them. An int, not a bool, so the caller's loop vectorizes.
inline float expf_libm_bits(float v, int32_t* exact) {
  const bool in_range = v > -80.0f && v < 88.0f;
  const double x = in_range ? static_cast<double>(v) : 0.0;
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds to an integer
  const double k = (x * 1.4426950408889634 + kRound) - kRound;
  const double r = (x - k * 0.6931471803691238) - k * 1.9082149292705877e-10;
  const double p = horner(r, 1.0 / 479001600.0, 1.0 / 39916800.0, 1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0,
                          1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0);
  // 2^k as a float (exact for |k| <= 126), widened exactly.
  const float scale = std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(k) + 127) << 23);
  const double e = p * static_cast<double>(scale);
  const float f = static_cast<float>(e);
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const double ulp = static_cast<double>(std::bit_cast<float>(bits & 0x7f800000u)) * 0x1p-23;
  const double from_midpoint = std::fabs(std::fabs(e - static_cast<double>(f)) - 0.5 * ulp);
  *exact = in_range && (bits & 0x7fffffu) != 0 && from_midpoint > 0.004 * ulp ? 1 : 0;
  return f;
}

// y = g / (1 + expf(-g)) * u for a row, with libm's expf bits: expf_libm_bits for a
// chunk (a loop that vectorizes where the ISA has double conversions: AVX2, AVX-512),
// libm for the few elements it cannot vouch for, then the quotients. y may alias g.
inline void silu_times_row_impl(const float* g, const float* u, float* y, int64_t n) {
  constexpr int64_t kChunk = 256;
  float e[kChunk];
  int32_t exact[kChunk];
  for (int64_t c = 0; c < n; c += kChunk) {
    const int64_t m = n - c < kChunk ? n - c : kChunk;
    for (int64_t k = 0; k < m; ++k) e[k] = expf_libm_bits(-g[c + k], &exact[k]);
    for (int64_t k = 0; k < m; ++k)
      if (exact[k] == 0) e[k] = std::exp(-g[c + k]);
    for (int64_t k = 0; k < m; ++k) y[c + k] = g[c + k] / (1.0f + e[k]) * u[c + k];
  }
}

// 1 / (1 + e^-z) for any z, from e^-|z| so nothing overflows; to a few ulp.
inline float logistic(float z) {
  const float e = exp_nonpositive(-std::fabs(z));
  const float r = 1.0f / (1.0f + e);
  return z >= 0.0f ? r : e * r;
}

}  // namespace
}  // namespace sluice::backends::cpu
