#pragma once
// The AVX2 path's float matmul tile (included by float_matmul_impl.h in the AVX2
// translation unit only): F32, F16 and BF16 weights read as stored and widened in
// registers (F16 through vcvtph2ps, BF16 a 16-bit shift: both exact), in blocks of
// weight rows x tokens whose accumulators fill the 16 ymm registers.
//
// The numerics are dot.h's and the scalar path's, bit for bit: each (row, token) has
// 16 lanes, lane l accumulating the products of elements k = l (mod 16) in order with
// one fused multiply-add each, the tail element by element, then reduce_lanes. An
// AVX2 register holds 8 of the 16 lanes (a "part"); the two parts never meet before
// the reduction, so a block may run them one after the other over the row.
//
// Why blocks: one weight row against one token (the generic tile's decode) is two
// chains of dependent FMAs, 4 cycles each, and a prefill block of 1 row x 4 tokens
// loads 10 vectors per 8 FMAs. Here decode runs 4 rows at once (8 independent
// chains) and prefill 4 rows x 3 tokens (7 loads per 12 FMAs).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/dot.h"
#include "backends/cpu/float_matmul_kernel.h"
#include "backends/cpu/half.h"
#include "backends/cpu/prefetch.h"

namespace sluice::backends::cpu {
namespace {
namespace avx2_tile {

constexpr int kPartLanes = 8;

// Weights k .. k + 7 of a stored row, as F32.
template <DType D>
inline __m256 load8(const std::byte* row, int64_t k) {
  if constexpr (D == DType::F32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k);
  } else {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + k));
    if constexpr (D == DType::F16) {
      return _mm256_cvtph_ps(halves);
    } else {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(halves), 16));
    }
  }
}

// Weight k of a stored row, as F32 (the tail).
template <DType D>
inline float weight_at(const std::byte* row, int64_t k) {
  if constexpr (D == DType::F32) {
    return reinterpret_cast<const float*>(row)[k];
  } else {
    uint16_t h;
    std::memcpy(&h, row + 2 * k, sizeof(h));
    return D == DType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
  }
}

// Parts [first, first + Parts) of the 16 lanes of every (row, token) of the block,
// over the whole row, into lanes[r][t].
template <DType D, int Rows, int Tokens, int Parts>
inline void accumulate(const std::byte* const* w, const float* const* x, int64_t n, int first,
                       float (*lanes)[Tokens][kDotLanes]) {
  static_assert(Rows * Tokens * Parts + Tokens + 1 <= 16, "the block must fit the 16 ymm registers");
  __m256 acc[Rows][Tokens][Parts];
  for (auto& row : acc)
    for (auto& token : row)
      for (__m256& v : token) v = _mm256_setzero_ps();
  const int64_t full = n / kDotLanes * kDotLanes;
  for (int64_t k = 0; k < full; k += kDotLanes) {
    for (int q = 0; q < Parts; ++q) {
      const int64_t at = k + (first + q) * kPartLanes;
      __m256 xv[Tokens];
      for (int t = 0; t < Tokens; ++t) xv[t] = _mm256_loadu_ps(x[t] + at);
      for (int r = 0; r < Rows; ++r) {
        const __m256 wv = load8<D>(w[r], at);
        for (int t = 0; t < Tokens; ++t) acc[r][t][q] = _mm256_fmadd_ps(wv, xv[t], acc[r][t][q]);
      }
    }
  }
  for (int r = 0; r < Rows; ++r)
    for (int t = 0; t < Tokens; ++t)
      for (int q = 0; q < Parts; ++q) {
        float* part = lanes[r][t] + (first + q) * kPartLanes;
        _mm256_storeu_ps(part, acc[r][t][q]);
        for (int i = 0; i < kPartLanes; ++i) {
          const int64_t k = full + (first + q) * kPartLanes + i;
          if (k < n) part[i] = std::fma(weight_at<D>(w[r], k), x[t][k], part[i]);
        }
      }
}

// y[t + j][o + r] for the block's rows and tokens.
template <DType D, int Rows, int Tokens>
inline void block(const FloatMatmulArgs& a, int64_t o, int64_t t) {
  const std::byte* w[Rows];
  const float* x[Tokens];
  for (int r = 0; r < Rows; ++r) w[r] = a.w + (o + r) * a.w_stride;
  for (int j = 0; j < Tokens; ++j) x[j] = a.x + (t + j) * a.x_stride;
  float lanes[Rows][Tokens][kDotLanes];
  if constexpr (Rows * Tokens * 2 + Tokens + 1 <= 16) {
    accumulate<D, Rows, Tokens, 2>(w, x, a.n, 0, lanes);
  } else {
    accumulate<D, Rows, Tokens, 1>(w, x, a.n, 0, lanes);
    accumulate<D, Rows, Tokens, 1>(w, x, a.n, 1, lanes);
  }
  for (int r = 0; r < Rows; ++r)
    for (int j = 0; j < Tokens; ++j) a.y[(t + j) * a.y_stride + o + r] = reduce_lanes(lanes[r][j]);
}

constexpr int kRows = 4;          // weight rows per block
constexpr int kPrefillTokens = 3;  // tokens per block where there are that many

template <DType D, int Rows>
inline void rows_times_tile_tokens(const FloatMatmulArgs& a, int64_t o, int64_t t_begin, int64_t t_end) {
  int64_t t = t_begin;
  for (; t + kPrefillTokens <= t_end; t += kPrefillTokens) block<D, Rows, kPrefillTokens>(a, o, t);
  for (; t < t_end; ++t) block<D, Rows, 1>(a, o, t);
}

template <DType D>
void tile(const FloatMatmulArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end) {
  // Decode reads each weight once per step from L3 or DRAM: ask for the block
  // after next while this one is computed (prefetch.h).
  const bool decode = t_end - t_begin < kPrefillTokens;
  const int64_t block_bytes = kRows * a.n * (D == DType::F32 ? 4 : 2);
  int64_t o = o_begin;
  for (; o + kRows <= o_end; o += kRows) {
    if (decode && o + 3 * kRows <= o_end) prefetch_bytes(a.w + (o + 2 * kRows) * a.w_stride, block_bytes);
    rows_times_tile_tokens<D, kRows>(a, o, t_begin, t_end);
  }
  for (; o < o_end; ++o) rows_times_tile_tokens<D, 1>(a, o, t_begin, t_end);
}

inline void float_tile(const FloatMatmulArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end) {
  switch (a.w_dtype) {
    case DType::F16: return tile<DType::F16>(a, t_begin, t_end, o_begin, o_end);
    case DType::BF16: return tile<DType::BF16>(a, t_begin, t_end, o_begin, o_end);
    default: return tile<DType::F32>(a, t_begin, t_end, o_begin, o_end);
  }
}

}  // namespace avx2_tile
}  // namespace
}  // namespace sluice::backends::cpu
