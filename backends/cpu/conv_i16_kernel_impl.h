#pragma once
// conv_i16_kernel.h's tile, included by one translation unit per ISA. Its functions
// have internal linkage so the per-ISA copies never merge at link time. Integer
// sums are exact in any order, so the paths differ only in how they add them up;
// the float steps are the same operations in the same order everywhere.
#include <cmath>
#include <cstring>

#include "backends/cpu/conv_i16_kernel.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace sluice::backends::cpu {
namespace {

#if defined(__AVX512VNNI__)
constexpr int kColumns = 4, kTokens = 6;  // 24 accumulators + 6 x + 1 w of 32 registers
#elif defined(__AVX2__)
constexpr int kColumns = 4, kTokens = 3;  // 12 accumulators + 3 x + 1 w of 16 registers
#else
constexpr int kColumns = 1, kTokens = 1;
#endif

inline void store_output(const ConvI16Args& a, int64_t column, int64_t t, float acc) {
  float scale;
  std::memcpy(&scale, a.w + column * a.w_stride + a.taps * a.padded_cin, sizeof(scale));
  const int64_t phase = column / a.period, channel = column % a.period;
  a.y[t * a.y_stride + phase * a.phase_stride + channel] = a.bias ? std::fma(acc, scale, a.bias[channel]) : acc * scale;
}

#if defined(__AVX512VNNI__)
inline int32_t sum_lanes(__m512i v) {
  const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// The four columns' sums of one token in one vector: [a0, a1, a2, a3].
inline __m128i sum_quad(__m512i a0, __m512i a1, __m512i a2, __m512i a3) {
  const __m512i s01 = _mm512_add_epi32(_mm512_unpacklo_epi32(a0, a1), _mm512_unpackhi_epi32(a0, a1));
  const __m512i s23 = _mm512_add_epi32(_mm512_unpacklo_epi32(a2, a3), _mm512_unpackhi_epi32(a2, a3));
  // Each 128-bit block now holds partial sums of a0, a1, a2, a3 in that order.
  const __m512i q = _mm512_add_epi32(_mm512_unpacklo_epi64(s01, s23), _mm512_unpackhi_epi64(s01, s23));
  const __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(q), _mm512_extracti64x4_epi64(q, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

// sums[r][i] = the tap's dot products of columns o + r with rows t + i: 32 multiply-adds
// an instruction (vpdpwssd); a run of 16 left over (padded_cin is a multiple of 16)
// loads half a vector, the rest zero.
template <int R, int T>
inline void tap_sums(const int16_t* const* w, const int16_t* const* x, int64_t n, int32_t (&sums)[R][T]) {
  __m512i acc[R][T];
  for (auto& row : acc)
    for (__m512i& v : row) v = _mm512_setzero_si512();
  const auto step = [&](int64_t k, __mmask32 mask) {
    __m512i xv[T];
    for (int i = 0; i < T; ++i) xv[i] = _mm512_maskz_loadu_epi16(mask, x[i] + k);
    for (int r = 0; r < R; ++r) {
      const __m512i wv = _mm512_maskz_loadu_epi16(mask, w[r] + k);
      for (int i = 0; i < T; ++i) acc[r][i] = _mm512_dpwssd_epi32(acc[r][i], wv, xv[i]);
    }
  };
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) step(k, ~__mmask32{0});
  if (k < n) step(k, __mmask32{0xFFFF});
  if constexpr (R == 4) {
    for (int i = 0; i < T; ++i) {
      alignas(16) int32_t lanes[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(lanes), sum_quad(acc[0][i], acc[1][i], acc[2][i], acc[3][i]));
      for (int r = 0; r < 4; ++r) sums[r][i] = lanes[r];
    }
  } else {
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < T; ++i) sums[r][i] = sum_lanes(acc[r][i]);
  }
}
#elif defined(__AVX2__)
inline int32_t sum_lanes(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// sums[r][i] = the tap's dot products of columns o + r with rows t + i.
template <int R, int T>
inline void tap_sums(const int16_t* const* w, const int16_t* const* x, int64_t n, int32_t (&sums)[R][T]) {
  __m256i acc[R][T];
  for (auto& row : acc)
    for (__m256i& v : row) v = _mm256_setzero_si256();
  for (int64_t k = 0; k < n; k += 16) {
    __m256i xv[T];
    for (int i = 0; i < T; ++i) xv[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i] + k));
    for (int r = 0; r < R; ++r) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[r] + k));
      for (int i = 0; i < T; ++i) acc[r][i] = _mm256_add_epi32(acc[r][i], _mm256_madd_epi16(wv, xv[i]));
    }
  }
  if constexpr (R == 4) {
    // Three horizontal adds give each token's four column sums in one vector.
    for (int i = 0; i < T; ++i) {
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(acc[0][i], acc[1][i]), _mm256_hadd_epi32(acc[2][i], acc[3][i]));
      alignas(16) int32_t lanes[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(lanes),
                      _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
      for (int r = 0; r < 4; ++r) sums[r][i] = lanes[r];
    }
  } else {
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < T; ++i) sums[r][i] = sum_lanes(acc[r][i]);
  }
}
#else
template <int R, int T>
inline void tap_sums(const int16_t* const* w, const int16_t* const* x, int64_t n, int32_t (&sums)[R][T]) {
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < T; ++i) {
      int64_t s = 0;  // conv_int16.h's bounds keep it within int32
      for (int64_t k = 0; k < n; ++k) s += int32_t{w[r][k]} * int32_t{x[i][k]};
      sums[r][i] = static_cast<int32_t>(s);
    }
}
#endif

// Output columns [o, o + R) x rows [t, t + T).
template <int R, int T>
void conv_i16_block(const ConvI16Args& a, int64_t o, int64_t t) {
  float acc[R][T] = {};
  for (int64_t j = 0; j < a.taps; ++j) {
    const int16_t* w[R];
    const int16_t* x[T];
    for (int r = 0; r < R; ++r) w[r] = a.w + (o + r) * a.w_stride + j * a.padded_cin;
    for (int i = 0; i < T; ++i) x[i] = a.x + (t + i + j * a.step) * a.x_stride;
    int32_t sums[R][T];
    tap_sums<R, T>(w, x, a.padded_cin, sums);
    for (int i = 0; i < T; ++i) {
      const float xs = a.x_scale[t + i + j * a.step];
      for (int r = 0; r < R; ++r) acc[r][i] = std::fma(static_cast<float>(sums[r][i]), xs, acc[r][i]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < T; ++i) store_output(a, o + r, t + i, acc[r][i]);
}

template <int R>
void conv_i16_rows(const ConvI16Args& a, int64_t o, int64_t t_begin, int64_t t_end) {
  int64_t t = t_begin;
  for (; t + kTokens <= t_end; t += kTokens) conv_i16_block<R, kTokens>(a, o, t);
  for (; t < t_end; ++t) conv_i16_block<R, 1>(a, o, t);
}

void conv_i16_tile_impl(const ConvI16Args& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end) {
  int64_t o = o_begin;
  for (; o + kColumns <= o_end; o += kColumns) conv_i16_rows<kColumns>(a, o, t_begin, t_end);
  for (; o < o_end; ++o) conv_i16_rows<1>(a, o, t_begin, t_end);
}

}  // namespace
}  // namespace sluice::backends::cpu
