#pragma once
// float_matmul_kernel.h's tile for the scalar and avx512 paths, included by one
// translation unit each (the avx2 path has its own: float_matmul_avx2_tile.h). Its
// functions have internal linkage so the per-ISA copies never merge at link time.
#include <cmath>
#include <cstring>
#include <type_traits>
#if defined(__AVX512F__)
#include "backends/cpu/reduce16_avx512.h"
#endif

#include "backends/cpu/float_matmul_kernel.h"
#include "backends/cpu/half.h"
#include "backends/cpu/prefetch.h"
#include "backends/cpu/vector_load.h"
#include "backends/cpu/dot.h"

namespace sluice::backends::cpu {
namespace {

constexpr int kMicroTokens = 4;  // activation rows sharing each load of the weight rows

// The widest vector the translation unit is built for. GCC keeps wider generic
// vectors on the stack across loop iterations, so the 16 lanes of dot.h are held as
// kParts native vectors.
#if defined(__AVX512F__)
constexpr int kNativeLanes = 16;
constexpr int kRowBlock = 6;  // weight rows sharing each activation load (dot_block_x4)
#else
constexpr int kNativeLanes = 4;
constexpr int kRowBlock = 1;
#endif
static_assert(kRowBlock <= kFloatScratchRows);
constexpr int kParts = kDotLanes / kNativeLanes;
#pragma GCC diagnostic ignored "-Wpsabi"
using NativeLanes = float __attribute__((vector_size(kNativeLanes * sizeof(float))));

inline NativeLanes load_native(const float* p) { return load_vector<NativeLanes>(p); }

// acc + w * x in each lane, rounded once (an FMA instruction, std::fma elsewhere).
inline NativeLanes fma_native(NativeLanes w, NativeLanes x, NativeLanes acc) {
#if defined(__AVX512F__)
  return (NativeLanes)_mm512_fmadd_ps((__m512)w, (__m512)x, (__m512)acc);
#else
  for (int l = 0; l < kNativeLanes; ++l) acc[l] = std::fma(w[l], x[l], acc[l]);
  return acc;
#endif
}

// Weight row o as F32: the stored row itself for F32, else widened into dst.
const float* weight_row(const FloatMatmulArgs& a, int64_t o, float* dst) {
  const std::byte* row = a.w + o * a.w_stride;
  if (a.w_dtype == DType::F32) return reinterpret_cast<const float*>(row);
  const auto* halves = reinterpret_cast<const uint16_t*>(row);
  if (a.w_dtype == DType::F16) {
    f16_row_to_f32(halves, dst, a.n);
  } else {
    bf16_row_to_f32(halves, dst, a.n);
  }
  return dst;
}

// out[r][t] = w[r] · x[t] for a block of weight rows and tokens, with explicit
// vectors so every ISA keeps the accumulators in registers. Each (r, t) has its own
// 16 lanes; lane l accumulates the products of elements k = l (mod 16) in order,
// each with one fused multiply-add (one rounding), the tail lane by lane, then
// dot.h's reduce_lanes. The same operations in the same order whatever the block,
// the tile or the ISA: the same bits. (A separate multiply and add would double the
// floating-point instructions of a prompt's compute-bound tiles.)
template <int Rows, int Tokens>
inline void dot_block(const float* const* w, const float* const* x, int64_t n, float (*out)[Tokens]) {
  NativeLanes acc[Rows][Tokens][kParts] = {};
  int64_t k = 0;
  for (; k + kDotLanes <= n; k += kDotLanes) {
    for (int p = 0; p < kParts; ++p) {
      NativeLanes xv[Tokens];
      for (int t = 0; t < Tokens; ++t) xv[t] = load_native(x[t] + k + p * kNativeLanes);
      for (int r = 0; r < Rows; ++r) {
        const NativeLanes wv = load_native(w[r] + k + p * kNativeLanes);
        for (int t = 0; t < Tokens; ++t) acc[r][t][p] = fma_native(wv, xv[t], acc[r][t][p]);
      }
    }
  }
  for (int r = 0; r < Rows; ++r) {
    for (int t = 0; t < Tokens; ++t) {
      float lanes[kDotLanes];
      std::memcpy(lanes, acc[r][t], sizeof(lanes));
      for (int l = 0; k + l < n; ++l) lanes[l] = std::fma(w[r][k + l], x[t][k + l], lanes[l]);
      out[r][t] = reduce_lanes(lanes);
    }
  }
}

#if defined(__AVX512F__)
// Weight rows are F32 (W = float) or F16 widened in registers as they are loaded
// (W = uint16_t): the same values as widening them first (the conversion is exact),
// without a pass over the rows into scratch.
template <class W>
inline __m512 load_weights(const W* row, int64_t k) {
  if constexpr (std::is_same_v<W, float>) {
    return _mm512_loadu_ps(row + k);
  } else {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k)));
  }
}

template <class W>
inline __m512 load_weights_masked(const W* row, int64_t k, __mmask16 m) {
  if constexpr (std::is_same_v<W, float>) {
    return _mm512_maskz_loadu_ps(m, row + k);
  } else {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + k));
  }
}

// dot_block<Rows, 4> for 4 or 6 weight rows with the reductions in vectors
// (reduce16_avx512.h; the tail with masked fused multiply-adds that leave the other
// lanes alone): the same bits. A short row (576 elements: 36 steps) would otherwise
// spend as long in the scalar reductions as in its FMAs. Rows 0-3 go through one
// reduce16, rows 4-5 through a second whose other eight inputs are zero (each
// result's tree is its own lanes'). out[t * 4 + r] for rows 0-3, out[16 + t * 4 +
// r - 4] for rows 4-5 (lanes 16 + t * 4 + 2, 3 unused). Six rows: a prompt's
// activation rows come from L2, so each load of them should feed as many FMAs as
// 32 registers allow (24 accumulators).
template <int Rows, class W>
inline void dot_block_x4(const W* const* w, const float* const* x, int64_t n, float* out) {
  static_assert(Rows == 4 || Rows == 6);
  __m512 acc[Rows * 4];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + kDotLanes <= n; k += kDotLanes) {
    __m512 xv[4];
    for (int t = 0; t < 4; ++t) xv[t] = _mm512_loadu_ps(x[t] + k);
    for (int r = 0; r < Rows; ++r) {
      const __m512 wv = load_weights(w[r], k);
      for (int t = 0; t < 4; ++t) acc[r * 4 + t] = _mm512_fmadd_ps(wv, xv[t], acc[r * 4 + t]);
    }
  }
  if (k < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - k)) - 1u);
    __m512 xv[4];
    for (int t = 0; t < 4; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x[t] + k);
    for (int r = 0; r < Rows; ++r) {
      const __m512 wv = load_weights_masked(w[r], k, m);
      for (int t = 0; t < 4; ++t) acc[r * 4 + t] = _mm512_mask3_fmadd_ps(wv, xv[t], acc[r * 4 + t], m);
    }
  }
  // acc[r * 4 + t] ends in lane 4t + r of its reduce16.
  __m512 group[16];
  for (int i = 0; i < 16; ++i) group[i] = acc[i];
  _mm512_storeu_ps(out, reduce16(group));
  if constexpr (Rows == 6) {
    for (int i = 0; i < 16; ++i) group[i] = i < 8 ? acc[16 + i] : _mm512_setzero_ps();
    _mm512_storeu_ps(out + 16, reduce16(group));
  }
}
#endif

// Weight rows [o, o + Rows) against the tile's tokens, Tokens-wide and then one by one.
template <int Rows>
void rows_times_tokens(const FloatMatmulArgs& a, int64_t o, int64_t t_begin, int64_t t_end, float* scratch) {
  // On AVX-512, F16 rows go to the 6-row kernel as they are stored when every token
  // of the tile is in a micro tile; otherwise (and on other paths) they are widened.
#if defined(__AVX512F__)
  const bool f16_direct = Rows == 6 && a.w_dtype == DType::F16 && (t_end - t_begin) % kMicroTokens == 0;
  const uint16_t* halves[Rows];
  if (f16_direct)
    for (int r = 0; r < Rows; ++r) halves[r] = reinterpret_cast<const uint16_t*>(a.w + (o + r) * a.w_stride);
#else
  constexpr bool f16_direct = false;
#endif
  const float* w[Rows] = {};
  if (!f16_direct)
    for (int r = 0; r < Rows; ++r) w[r] = weight_row(a, o + r, scratch + r * a.n);
  int64_t t = t_begin;
  for (; t + kMicroTokens <= t_end; t += kMicroTokens) {
    const float* xs[kMicroTokens];
    float out[Rows][kMicroTokens];
    for (int i = 0; i < kMicroTokens; ++i) xs[i] = a.x + (t + i) * a.x_stride;
#if defined(__AVX512F__)
    if constexpr ((Rows == 4 || Rows == 6) && kMicroTokens == 4) {
      float by_token[32];
      if (f16_direct) {
        dot_block_x4<Rows>(halves, xs, a.n, by_token);
      } else {
        dot_block_x4<Rows>(w, xs, a.n, by_token);
      }
      for (int i = 0; i < kMicroTokens; ++i) {
        float* y = a.y + (t + i) * a.y_stride + o;
        std::memcpy(y, by_token + i * 4, 4 * sizeof(float));
        if constexpr (Rows == 6) std::memcpy(y + 4, by_token + 16 + i * 4, 2 * sizeof(float));
      }
      continue;
    }
#endif
    dot_block<Rows, kMicroTokens>(w, xs, a.n, out);
    for (int r = 0; r < Rows; ++r)
      for (int i = 0; i < kMicroTokens; ++i) a.y[(t + i) * a.y_stride + o + r] = out[r][i];
  }
  for (; t < t_end; ++t) {
    const float* xs[1] = {a.x + t * a.x_stride};
    float out[Rows][1];
    dot_block<Rows, 1>(w, xs, a.n, out);
    for (int r = 0; r < Rows; ++r) a.y[t * a.y_stride + o + r] = out[r][0];
  }
}

void float_tile(const FloatMatmulArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end,
                float* scratch) {
  int64_t o = o_begin;
  // Blocks of rows pay where several tokens reuse them; a decode tile (fewer tokens
  // than a micro tile) streams row by row, which measured faster on AVX-512.
  if (t_end - t_begin >= kMicroTokens) {
    for (; o + kRowBlock <= o_end; o += kRowBlock) rows_times_tokens<kRowBlock>(a, o, t_begin, t_end, scratch);
    if constexpr (kRowBlock > 4)
      for (; o + 4 <= o_end; o += 4) rows_times_tokens<4>(a, o, t_begin, t_end, scratch);
  }
  // Row by row (decode): the weights stream from L3 or DRAM once per step, so ask for
  // the row a few ahead before it is needed (prefetch.h has the measurements).
  const int64_t row_bytes = a.n * (a.w_dtype == DType::F32 ? 4 : 2);
  for (; o < o_end; ++o) {
    if (o + kPrefetchRowsAhead < o_end) prefetch_bytes(a.w + (o + kPrefetchRowsAhead) * a.w_stride, row_bytes);
    rows_times_tokens<1>(a, o, t_begin, t_end, scratch);
  }
}

}  // namespace
}  // namespace sluice::backends::cpu
