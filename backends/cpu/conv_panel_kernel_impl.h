#pragma once
// conv_panel_kernel.h's tile, included by one translation unit per ISA (AVX-512,
// AVX2, scalar std::fma). Internal linkage, so the per-ISA copies never merge.
// The inputs go in pairs: one step loads a panel's 16 weights of an even input
// and the 16 of the next, and broadcasts both inputs of each row.
#include <cmath>
#include <cstring>

#include "backends/cpu/conv_panel_kernel.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace sluice::backends::cpu {
namespace {

constexpr int kLanes = 16;  // output columns per panel (conv_panels.h)

#if defined(__AVX512F__)
// One zmm per panel. 8 rows x 2 panels: 16 accumulators, 32 FMAs per pair step
// for 4 weight loads and 16 broadcasts. 6x3, 5x4, 6x4, 10x2 and 12x2 measured
// within noise of it (~310-330 GFLOP/s on 2 threads of the Xeon VM, the row-dot
// tile ~220); 8x2 splits 96 columns evenly.
constexpr int kTokens = 8, kPanels = 2;
using Vec = __m512;
constexpr int kHalves = 1;
inline Vec vec_zero() { return _mm512_setzero_ps(); }
inline Vec vec_set1(float v) { return _mm512_set1_ps(v); }
inline Vec vec_madd(Vec x, Vec w, Vec acc) { return _mm512_fmadd_ps(x, w, acc); }
inline void vec_store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec vec_load(const float* p) { return _mm512_loadu_ps(p); }
inline Vec vec_add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline void load_pairs(const float* p, Vec& even, Vec& odd) {
  even = _mm512_loadu_ps(p);
  odd = _mm512_loadu_ps(p + 16);
}
#elif defined(__AVX2__)
constexpr int kTokens = 4, kPanels = 1;
using Vec = __m256;
constexpr int kHalves = 2;
inline Vec vec_zero() { return _mm256_setzero_ps(); }
inline Vec vec_set1(float v) { return _mm256_set1_ps(v); }
inline Vec vec_madd(Vec x, Vec w, Vec acc) { return _mm256_fmadd_ps(x, w, acc); }
inline void vec_store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vec_load(const float* p) { return _mm256_loadu_ps(p); }
inline Vec vec_add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline void load_pairs(const float* p, Vec& even, Vec& odd) {
  even = _mm256_loadu_ps(p);
  odd = _mm256_loadu_ps(p + 16);
}
#else
constexpr int kTokens = 1, kPanels = 1;
struct Vec {
  float v[4];
};
constexpr int kHalves = 4;
inline Vec vec_zero() { return Vec{}; }
inline Vec vec_set1(float v) { return Vec{{v, v, v, v}}; }
inline Vec vec_madd(Vec x, Vec w, Vec acc) {
  for (int l = 0; l < 4; ++l) acc.v[l] = std::fma(x.v[l], w.v[l], acc.v[l]);
  return acc;
}
inline void vec_store(float* p, Vec v) { std::memcpy(p, v.v, sizeof v.v); }
inline Vec vec_load(const float* p) {
  Vec v;
  std::memcpy(v.v, p, sizeof v.v);
  return v;
}
inline Vec vec_add(Vec a, Vec b) {
  for (int l = 0; l < 4; ++l) a.v[l] += b.v[l];
  return a;
}
inline void load_pairs(const float* p, Vec& even, Vec& odd) {
  std::memcpy(even.v, p, sizeof even.v);
  std::memcpy(odd.v, p + 16, sizeof odd.v);
}
#endif
constexpr int kHalfLanes = kLanes / kHalves;

// Rows [t, t + T) x panels [o, o + 16 V), columns from o_end on not written.
template <int T, int V>
void panel_block(const ConvPanelArgs& a, int64_t t, int64_t o, int64_t o_end) {
  Vec acc[T][V][kHalves];
  for (auto& row : acc)
    for (auto& panel : row)
      for (Vec& h : panel) h = vec_zero();
  const int64_t pairs_per_tap = a.cin / 2, pairs = a.taps * pairs_per_tap;
  for (int64_t j = 0; j < a.taps; ++j) {
    const float* x[T];
    const float* w[V];
    for (int i = 0; i < T; ++i) x[i] = a.x + (t + i + j * a.step) * a.x_stride;
    for (int v = 0; v < V; ++v) w[v] = a.w + ((o / kLanes + v) * pairs + j * pairs_per_tap) * 2 * kLanes;
    for (int64_t m = 0; m < pairs_per_tap; ++m) {
      Vec even[V][kHalves], odd[V][kHalves];
      for (int v = 0; v < V; ++v)
        for (int h = 0; h < kHalves; ++h)
          load_pairs(w[v] + m * 2 * kLanes + h * kHalfLanes, even[v][h], odd[v][h]);
      for (int i = 0; i < T; ++i) {
        const Vec xe = vec_set1(x[i][2 * m]), xo = vec_set1(x[i][2 * m + 1]);
        for (int v = 0; v < V; ++v)
          for (int h = 0; h < kHalves; ++h) {
            acc[i][v][h] = vec_madd(xe, even[v][h], acc[i][v][h]);
            acc[i][v][h] = vec_madd(xo, odd[v][h], acc[i][v][h]);
          }
      }
    }
  }
  for (int v = 0; v < V; ++v) {
    const int64_t c0 = o + v * kLanes, phase = c0 / a.period, channel = c0 % a.period;
    const bool whole = c0 + kLanes <= o_end && channel + kLanes <= a.period;
    for (int i = 0; i < T; ++i) {
      float* row = a.y + (t + i) * a.y_stride;
      if (whole) {
        float* y = row + phase * a.phase_stride + channel;
        for (int h = 0; h < kHalves; ++h) {
          const Vec sum = a.bias ? vec_add(acc[i][v][h], vec_load(a.bias + channel + h * kHalfLanes)) : acc[i][v][h];
          vec_store(y + h * kHalfLanes, sum);
        }
        continue;
      }
      float lanes[kLanes];
      for (int h = 0; h < kHalves; ++h) vec_store(lanes + h * kHalfLanes, acc[i][v][h]);
      for (int l = 0; l < kLanes && c0 + l < o_end; ++l) {
        const int64_t c = c0 + l, ph = c / a.period, ch = c % a.period;
        row[ph * a.phase_stride + ch] = a.bias ? lanes[l] + a.bias[ch] : lanes[l];
      }
    }
  }
}

template <int V>
void panel_rows(const ConvPanelArgs& a, int64_t t_begin, int64_t t_end, int64_t o, int64_t o_end) {
  int64_t t = t_begin;
  for (; t + kTokens <= t_end; t += kTokens) panel_block<kTokens, V>(a, t, o, o_end);
  for (; t < t_end; ++t) panel_block<1, V>(a, t, o, o_end);
}

void conv_panel_tile_impl(const ConvPanelArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end) {
  int64_t o = o_begin;
  for (; o + kPanels * kLanes <= o_end; o += kPanels * kLanes) panel_rows<kPanels>(a, t_begin, t_end, o, o_end);
  for (; o < o_end; o += kLanes) panel_rows<1>(a, t_begin, t_end, o, o_end);
}

}  // namespace
}  // namespace sluice::backends::cpu
