#pragma once
// conv_kernel.h's tile, included by one translation unit per ISA. Its functions
// have internal linkage so the per-ISA copies never merge at link time.
#include <cmath>
#include <cstring>

#include "backends/cpu/conv_kernel.h"
#include "backends/cpu/dot.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace sluice::backends::cpu {
namespace {

// Native vectors holding dot.h's 16 lanes, and the register tile: kRows weight
// rows x kTokens output rows, kRows * kTokens * kParts accumulators.
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kParts = 1;
constexpr int kRows = 4, kTokens = 4;  // 16 accumulators + 4 x + 1 w of 32 registers
inline Vec vec_zero() { return _mm512_setzero_ps(); }
inline Vec vec_load(const float* p) { return _mm512_loadu_ps(p); }
inline Vec vec_madd(Vec w, Vec x, Vec acc) { return _mm512_fmadd_ps(w, x, acc); }
inline void vec_store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
#elif defined(__AVX2__)
using Vec = __m256;
constexpr int kParts = 2;
constexpr int kRows = 2, kTokens = 3;  // 12 accumulators + 3 x + 1 w of 16 registers
inline Vec vec_zero() { return _mm256_setzero_ps(); }
inline Vec vec_load(const float* p) { return _mm256_loadu_ps(p); }
inline Vec vec_madd(Vec w, Vec x, Vec acc) { return _mm256_fmadd_ps(w, x, acc); }
inline void vec_store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
#else
struct Vec {
  float v[4];
};
constexpr int kParts = 4;
constexpr int kRows = 1, kTokens = 4;
inline Vec vec_zero() { return Vec{}; }
inline Vec vec_load(const float* p) {
  Vec r;
  std::memcpy(r.v, p, sizeof(r.v));
  return r;
}
inline Vec vec_madd(Vec w, Vec x, Vec acc) {
  for (int l = 0; l < 4; ++l) acc.v[l] = std::fma(w.v[l], x.v[l], acc.v[l]);
  return acc;
}
inline void vec_store(float* p, Vec v) { std::memcpy(p, v.v, sizeof(v.v)); }
#endif
constexpr int kPartLanes = kDotLanes / kParts;

// acc[r][t] += w[r] * x[t] over one block of 16 elements.
template <int R, int T>
inline void madd_block(Vec (&acc)[R][T][kParts], const float* const* w, const float* const* x, int64_t k) {
  for (int p = 0; p < kParts; ++p) {
    Vec xv[T];
    for (int t = 0; t < T; ++t) xv[t] = vec_load(x[t] + k + p * kPartLanes);
    for (int r = 0; r < R; ++r) {
      const Vec wv = vec_load(w[r] + k + p * kPartLanes);
      for (int t = 0; t < T; ++t) acc[r][t][p] = vec_madd(wv, xv[t], acc[r][t][p]);
    }
  }
}

// Output columns [o, o + R) x rows [t, t + T): every tap's Cin run, 16 at a time,
// the tap's tail zero-padded into a block of its own.
template <int R, int T>
void conv_block(const ConvArgs& a, int64_t o, int64_t t) {
  Vec acc[R][T][kParts];
  for (auto& rows : acc)
    for (auto& parts : rows)
      for (Vec& v : parts) v = vec_zero();
  const int64_t cin = a.cin, full = cin / kDotLanes * kDotLanes, tail = cin - full;
  for (int64_t j = 0; j < a.taps; ++j) {
    const float* w[R];
    const float* x[T];
    for (int r = 0; r < R; ++r) w[r] = a.w + (o + r) * a.w_stride + j * cin;
    for (int i = 0; i < T; ++i) x[i] = a.x + (t + i + j * a.step) * a.x_stride;
    for (int64_t k = 0; k < full; k += kDotLanes) madd_block<R, T>(acc, w, x, k);
    if (tail == 0) continue;
    float w_pad[R][kDotLanes] = {}, x_pad[T][kDotLanes] = {};
    const float* wp[R];
    const float* xp[T];
    for (int r = 0; r < R; ++r) std::memcpy(w_pad[r], w[r] + full, static_cast<size_t>(tail) * sizeof(float)), wp[r] = w_pad[r];
    for (int i = 0; i < T; ++i) std::memcpy(x_pad[i], x[i] + full, static_cast<size_t>(tail) * sizeof(float)), xp[i] = x_pad[i];
    madd_block<R, T>(acc, wp, xp, 0);
  }
  for (int r = 0; r < R; ++r) {
    const int64_t c = o + r, phase = c / a.period, channel = c % a.period;
    for (int i = 0; i < T; ++i) {
      float lanes[kDotLanes];
      for (int p = 0; p < kParts; ++p) vec_store(lanes + p * kPartLanes, acc[r][i][p]);
      float sum = reduce_lanes(lanes);
      if (a.bias) sum += a.bias[channel];
      a.y[(t + i) * a.y_stride + phase * a.phase_stride + channel] = sum;
    }
  }
}

template <int R>
void conv_rows(const ConvArgs& a, int64_t o, int64_t t_begin, int64_t t_end) {
  int64_t t = t_begin;
  for (; t + kTokens <= t_end; t += kTokens) conv_block<R, kTokens>(a, o, t);
  for (; t < t_end; ++t) conv_block<R, 1>(a, o, t);
}

void conv_tile_impl(const ConvArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end) {
  int64_t o = o_begin;
  for (; o + kRows <= o_end; o += kRows) conv_rows<kRows>(a, o, t_begin, t_end);
  for (; o < o_end; ++o) conv_rows<1>(a, o, t_begin, t_end);
}

}  // namespace
}  // namespace sluice::backends::cpu
