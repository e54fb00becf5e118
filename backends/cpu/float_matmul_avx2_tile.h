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
// chains) and prefill 4 rows x 3 tokens (7 loads per 12 FMAs). The reductions run
// eight at a time in vectors (reduce8): done one by one, with the tail loop, they
// took as long as a 576-element row's FMAs.
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
// over the whole row, into parts[r][t][part].
template <DType D, int Rows, int Tokens, int Parts>
inline void accumulate(const std::byte* const* w, const float* const* x, int64_t n, int first,
                       __m256 (*parts)[Tokens][2]) {
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
        __m256 v = acc[r][t][q];
        if (full < n) {  // the tail, element by element into its lanes
          float lanes[kPartLanes];
          _mm256_storeu_ps(lanes, v);
          for (int i = 0; i < kPartLanes; ++i) {
            const int64_t k = full + (first + q) * kPartLanes + i;
            if (k < n) lanes[i] = std::fma(weight_at<D>(w[r], k), x[t][k], lanes[i]);
          }
          v = _mm256_loadu_ps(lanes);
        }
        parts[r][t][first + q] = v;
      }
}

// reduce_lanes of eight results at once, each given as its lanes 0-7 already added to
// its lanes 8-15 (reduce_lanes's first stage): its later stages (+ 4, + 2, + 1) add
// the same pairs in vectors. Lane 4 * (j % 2) + j / 2 of the result holds result j.
inline __m256 reduce8(const __m256 (&s8)[8]) {
  __m256 s4[4];  // 128-bit half h of s4[i]: result 2i + h's four
  for (int i = 0; i < 4; ++i)
    s4[i] = _mm256_add_ps(_mm256_permute2f128_ps(s8[2 * i], s8[2 * i + 1], 0x20),
                          _mm256_permute2f128_ps(s8[2 * i], s8[2 * i + 1], 0x31));
  __m256 s2[2];  // half h of s2[i]: results 4i + h, 4i + 2 + h, two each
  for (int i = 0; i < 2; ++i)
    s2[i] = _mm256_add_ps(_mm256_shuffle_ps(s4[2 * i], s4[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm256_shuffle_ps(s4[2 * i], s4[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm256_add_ps(_mm256_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm256_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// y[t + j][o + r] for the block's rows and tokens.
template <DType D, int Rows, int Tokens>
inline void block(const FloatMatmulArgs& a, int64_t o, int64_t t) {
  const std::byte* w[Rows];
  const float* x[Tokens];
  for (int r = 0; r < Rows; ++r) w[r] = a.w + (o + r) * a.w_stride;
  for (int j = 0; j < Tokens; ++j) x[j] = a.x + (t + j) * a.x_stride;
  __m256 parts[Rows][Tokens][2];
  if constexpr (Rows * Tokens * 2 + Tokens + 1 <= 16) {
    accumulate<D, Rows, Tokens, 2>(w, x, a.n, 0, parts);
  } else {
    accumulate<D, Rows, Tokens, 1>(w, x, a.n, 0, parts);
    accumulate<D, Rows, Tokens, 1>(w, x, a.n, 1, parts);
  }
  constexpr int kResults = Rows * Tokens;
  for (int g = 0; g < kResults; g += 8) {
    __m256 s8[8];
    for (int i = 0; i < 8; ++i) {
      const int at = g + i;
      s8[i] = at < kResults ? _mm256_add_ps(parts[at / Tokens][at % Tokens][0], parts[at / Tokens][at % Tokens][1])
                            : _mm256_setzero_ps();
    }
    float sums[8];
    _mm256_storeu_ps(sums, reduce8(s8));
    for (int i = 0; i < 8 && g + i < kResults; ++i)
      a.y[(t + (g + i) % Tokens) * a.y_stride + o + (g + i) / Tokens] = sums[4 * (i % 2) + i / 2];
  }
}

constexpr int kRows = 4;          // weight rows per block
constexpr int kPrefillTokens = 3;  // tokens per block where there are that many

// Tokens [t, t + Tokens) against the tile's rows.
template <DType D, int Tokens>
inline void tokens_times_tile_rows(const FloatMatmulArgs& a, int64_t t, int64_t o_begin, int64_t o_end, bool decode) {
  const int64_t block_bytes = kRows * a.n * (D == DType::F32 ? 4 : 2);
  int64_t o = o_begin;
  for (; o + kRows <= o_end; o += kRows) {
    if (decode && o + 3 * kRows <= o_end) prefetch_bytes(a.w + (o + 2 * kRows) * a.w_stride, block_bytes);
    block<D, kRows, Tokens>(a, o, t);
  }
  for (; o < o_end; ++o) block<D, 1, Tokens>(a, o, t);
}

// Tokens outside, rows inside: a tile's rows (24, matmul.cpp) take at most 72 KiB of
// F16/BF16 and stay in L2 while the tokens' activations (up to 256 rows, more than
// Zen 3's 512 KiB L2) each come in once; the other way round, every block of rows
// streamed all 256 activation rows again from L3 (prefill 2x slower on the EPYC VM).
template <DType D>
void tile(const FloatMatmulArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end) {
  // Decode reads each weight once per step from L3 or DRAM: ask for the block of
  // rows after next while this one is computed (prefetch.h).
  const bool decode = t_end - t_begin < kPrefillTokens;
  int64_t t = t_begin;
  for (; t + kPrefillTokens <= t_end; t += kPrefillTokens)
    tokens_times_tile_rows<D, kPrefillTokens>(a, t, o_begin, o_end, decode);
  for (; t < t_end; ++t) tokens_times_tile_rows<D, 1>(a, t, o_begin, o_end, decode);
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
