#pragma once
// conv_kernel.h's tile, included by one translation unit per ISA. Its functions
// have internal linkage so the per-ISA copies never merge at link time.
#include <algorithm>
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
inline Vec vec_set1(float v) { return _mm512_set1_ps(v); }
inline Vec vec_add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
#elif defined(__AVX2__)
using Vec = __m256;
constexpr int kParts = 2;
constexpr int kRows = 2, kTokens = 3;  // 12 accumulators + 3 x + 1 w of 16 registers
inline Vec vec_zero() { return _mm256_setzero_ps(); }
inline Vec vec_load(const float* p) { return _mm256_loadu_ps(p); }
inline Vec vec_madd(Vec w, Vec x, Vec acc) { return _mm256_fmadd_ps(w, x, acc); }
inline void vec_store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vec_set1(float v) { return _mm256_set1_ps(v); }
inline Vec vec_add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
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
inline Vec vec_set1(float v) { return Vec{{v, v, v, v}}; }
inline Vec vec_add(Vec a, Vec b) {
  for (int l = 0; l < 4; ++l) a.v[l] += b.v[l];
  return a;
}
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

#if defined(__AVX512F__)
// reduce_lanes of 16 accumulators at once: each level adds the same pairs of
// lanes as reduce_lanes (l + 8, + 4, + 2, + 1), only 16 accumulators side by
// side, so the bits are reduce_lanes's. Lane 4t + r of the result is acc[r][t]:
// each token's 4 columns come out together.
// _mm512_shuffle_f32x4 through its masked form: g++ 12 warns about the unmasked
// one's undefined source operand.
template <int kImm>
inline __m512 shuffle_quarters(__m512 x, __m512 y) {
  return _mm512_mask_shuffle_f32x4(x, 0xFFFF, x, y, kImm);
}

inline __m512 reduce_4x4(const Vec (&acc)[4][4][kParts]) {
  __m512 v8[8], v4[4], v2[2];
  // Accumulator n = 4r + t; pairs (2k, 2k+1). Level 1: [q0+q2 | q1+q3] of each.
  for (int k = 0; k < 8; ++k) {
    const __m512 x = acc[(2 * k) / 4][(2 * k) % 4][0], y = acc[(2 * k + 1) / 4][(2 * k + 1) % 4][0];
    v8[k] = _mm512_add_ps(shuffle_quarters<_MM_SHUFFLE(1, 0, 1, 0)>(x, y),
                          shuffle_quarters<_MM_SHUFFLE(3, 2, 3, 2)>(x, y));
  }
  // Level 2: one 128-bit quarter per accumulator, n = 4m + quarter.
  for (int m = 0; m < 4; ++m)
    v4[m] = _mm512_add_ps(shuffle_quarters<_MM_SHUFFLE(2, 0, 2, 0)>(v8[2 * m], v8[2 * m + 1]),
                          shuffle_quarters<_MM_SHUFFLE(3, 1, 3, 1)>(v8[2 * m], v8[2 * m + 1]));
  // Level 3: quarter j holds accumulators j, 4 + j (v2[0]) or 8 + j, 12 + j (v2[1]), two lanes each.
  for (int h = 0; h < 2; ++h)
    v2[h] = _mm512_add_ps(_mm512_shuffle_ps(v4[2 * h], v4[2 * h + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_ps(v4[2 * h], v4[2 * h + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Level 4: lane 4j + i is accumulator 4i + j.
  return _mm512_add_ps(_mm512_shuffle_ps(v2[0], v2[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(v2[0], v2[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// Writes a 4 x 4 block: + bias (the same one add per element as the scalar
// store), 4 contiguous columns per token when they share a phase.
inline void store_block_4x4(const ConvArgs& a, const Vec (&acc)[4][4][kParts], int64_t o, int64_t t) {
  alignas(64) float sums[16];
  _mm512_store_ps(sums, reduce_4x4(acc));
  const int64_t phase = o / a.period, channel = o % a.period;
  if (channel + 4 <= a.period) {
    const __m128 bias = a.bias ? _mm_loadu_ps(a.bias + channel) : _mm_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      __m128 v = _mm_load_ps(sums + 4 * i);
      if (a.bias) v = _mm_add_ps(v, bias);
      _mm_storeu_ps(a.y + (t + i) * a.y_stride + phase * a.phase_stride + channel, v);
    }
    return;
  }
  for (int r = 0; r < 4; ++r) {
    const int64_t c = o + r, ph = c / a.period, ch = c % a.period;
    for (int i = 0; i < 4; ++i) {
      float sum = sums[4 * i + r];
      if (a.bias) sum += a.bias[ch];
      a.y[(t + i) * a.y_stride + ph * a.phase_stride + ch] = sum;
    }
  }
}
#endif

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
#if defined(__AVX512F__)
  if constexpr (R == 4 && T == 4) {
    store_block_4x4(a, acc, o, t);
    return;
  }
#endif
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

// cin < 16 (conv_kernel.h): 16 output columns [o, o + 16) side by side, kParts
// vectors each. Lane l < cin of column c is the chain fma(w, x, acc) over the taps
// in order, as conv_block's lane l; lanes >= cin hold +0 as its padded lanes do
// (fma(0, 0, +0) = +0). Then reduce_lanes's tree, on the 16 columns at once.
void narrow_block(const ConvArgs& a, int64_t o, int64_t t, float* sums) {
  Vec lanes[kDotLanes][kParts];
  for (auto& lane : lanes)
    for (Vec& v : lane) v = vec_zero();
  for (int64_t l = 0; l < a.cin; ++l) {
    for (int64_t j = 0; j < a.taps; ++j) {
      const Vec x = vec_set1(a.x[(t + j * a.step) * a.x_stride + l]);
      const float* w = a.w_narrow + (j * a.cin + l) * a.narrow_columns + o;
      for (int p = 0; p < kParts; ++p) lanes[l][p] = vec_madd(vec_load(w + p * kPartLanes), x, lanes[l][p]);
    }
  }
  for (int p = 0; p < kParts; ++p) {
    Vec s8[8], s4[4], s2[2];
    for (int l = 0; l < 8; ++l) s8[l] = vec_add(lanes[l][p], lanes[l + 8][p]);
    for (int l = 0; l < 4; ++l) s4[l] = vec_add(s8[l], s8[l + 4]);
    for (int l = 0; l < 2; ++l) s2[l] = vec_add(s4[l], s4[l + 2]);
    vec_store(sums + p * kPartLanes, vec_add(s2[0], s2[1]));
  }
}

// o_begin is a multiple of 16 (run_conv's column tiles), so every block's 16
// loads stay inside w_narrow's padded columns.
void narrow_tile(const ConvArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end) {
  for (int64_t o = o_begin; o < o_end; o += kDotLanes) {
    const int64_t count = std::min<int64_t>(kDotLanes, o_end - o);
    for (int64_t t = t_begin; t < t_end; ++t) {
      float sums[kDotLanes];
      narrow_block(a, o, t, sums);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t c = o + i, phase = c / a.period, channel = c % a.period;
        float sum = sums[i];
        if (a.bias) sum += a.bias[channel];
        a.y[t * a.y_stride + phase * a.phase_stride + channel] = sum;
      }
    }
  }
}

void conv_tile_impl(const ConvArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end) {
  if (a.w_narrow != nullptr) {
    narrow_tile(a, t_begin, t_end, o_begin, o_end);
    return;
  }
  int64_t o = o_begin;
  for (; o + kRows <= o_end; o += kRows) conv_rows<kRows>(a, o, t_begin, t_end);
  for (; o < o_end; ++o) conv_rows<1>(a, o, t_begin, t_end);
}

}  // namespace
}  // namespace sluice::backends::cpu
