#pragma once
// AVX2 integer kernels, included by kernels_avx2.cpp (AVX2 + FMA + F16C) and by
// kernels_avx2_vnni.cpp (the same plus AVX-VNNI, SLUICE_AVX_VNNI defined). A
// 32-byte vector holds one 4-element chunk of 8 rows, so a group is done as two
// halves of 8 rows. Without VNNI the u8 x s8 products go through vpmaddubsw, whose
// 16-bit pair sums cannot overflow for values below 64 (63 * 127 * 2 < 2^15);
// 8-bit values are split into nibbles first.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/prefetch.h"
#include "backends/cpu/quant/act_quantize.h"
#include "backends/cpu/quant/quant_kernels.h"

// Internal linkage (as act_quantize.h): the two including translation units are
// compiled for different ISAs and must keep separate copies.
namespace sluice::backends::cpu::avx2 {
namespace {

constexpr int kTileTokens = 8;


inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 32 bytes: `value` where bit i of m is set, else 0.
inline __m256i expand_bits(uint32_t m, uint8_t value) {
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int32_t>(m)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3,
                       3, 3));
  const __m256i bits = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bits), bits);
  return _mm256_and_si256(set, _mm256_set1_epi8(static_cast<char>(value)));
}

// The 8 chunk vectors of rows [8h, 8h + 8) of one block.
template <int Bits>
inline void decode(const uint8_t* block, int h, __m256i ch[8]) {
  if constexpr (Bits == 8) {
    for (int c = 0; c < 8; ++c) ch[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * c + 32 * h));
  } else {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int p = 0; p < 4; ++p) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * p + 32 * h));
      ch[p] = _mm256_and_si256(v, low4);
      ch[p + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
    }
    for (int plane = 0; plane < (Bits == 5 ? 1 : Bits == 6 ? 2 : 0); ++plane)
      for (int c = 0; c < 8; ++c) {
        const uint32_t m = static_cast<uint32_t>(load_i32(block + 256 + 64 * plane + 8 * c + 4 * h));
        ch[c] = _mm256_or_si256(ch[c], expand_bits(m, static_cast<uint8_t>(16 << plane)));
      }
  }
}

// acc += Σ over 4-element groups of u (u8) * q (s8), per int32 lane.
template <int Bits>
inline __m256i dot_add(__m256i acc, __m256i u, __m256i q) {
#if defined(SLUICE_AVX_VNNI)
  return _mm256_dpbusd_avx_epi32(acc, u, q);
#else
  const __m256i ones = _mm256_set1_epi16(1);
  if constexpr (Bits == 8) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i lo = _mm256_maddubs_epi16(_mm256_and_si256(u, low4), q);
    const __m256i hi = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(u, 4), low4), q);
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(lo, ones));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(hi, _mm256_set1_epi16(16)));
  } else {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, q), ones));
  }
#endif
}

template <int Bits, int First, int Count>
inline __m256i chunk_dot(const __m256i ch[8], const int8_t* q) {
  __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
  for (int c = First; c < First + Count; c += 2) {
    s0 = dot_add<Bits>(s0, ch[c], _mm256_set1_epi32(load_i32(q + 4 * c)));
    s1 = dot_add<Bits>(s1, ch[c + 1], _mm256_set1_epi32(load_i32(q + 4 * (c + 1))));
  }
  return _mm256_add_epi32(s0, s1);
}

inline __m256 load_halves(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <int Bits, bool Affine, bool Split16, int N>
void tile(const uint8_t* group, int64_t num_blocks, float offset, const ActBlock* x, float* y, int64_t y_stride,
          int valid_rows) {
  using F = PackedLayout<Bits, Affine, Split16>;
  const __m256 off = _mm256_set1_ps(offset);
  for (int h = 0; h < 2; ++h) {
    const int rows = valid_rows - 8 * h < 8 ? valid_rows - 8 * h : 8;
    if (rows <= 0) break;
    __m256 acc[N];
    for (int n = 0; n < N; ++n) acc[n] = _mm256_setzero_ps();
    for (int64_t k = 0; k < num_blocks; ++k) {
      const uint8_t* block = group + k * F::kBlockBytes;
      if (h == 0) prefetch_ahead<F::kBlockBytes>(block);  // the second half finds the group in L1
      __m256i ch[8];
      decode<Bits>(block, h, ch);
      const __m256 a0 = load_halves(block + F::kScales + 16 * h);
      __m256 a1 = a0;
      if constexpr (Split16) a1 = load_halves(block + F::kScales + 32 + 16 * h);
      __m256 b0, b1 = a1;
      if constexpr (Affine) {
        b0 = load_halves(block + F::kB + 16 * h);
      } else {
        b0 = _mm256_mul_ps(a0, off);
        if constexpr (Split16) b1 = _mm256_mul_ps(a1, off);
      }
      for (int n = 0; n < N; ++n) {
        const ActBlock& xb = x[n * num_blocks + k];
        const __m256 d = _mm256_set1_ps(xb.d);
        if constexpr (Split16) {
          const __m256i lo = chunk_dot<Bits, 0, 4>(ch, xb.q);
          const __m256i hi = chunk_dot<Bits, 4, 4>(ch, xb.q);
          acc[n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), _mm256_mul_ps(a0, d), acc[n]);
          acc[n] = _mm256_fmadd_ps(b0, _mm256_set1_ps(xb.s_lo), acc[n]);
          acc[n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), _mm256_mul_ps(a1, d), acc[n]);
          acc[n] = _mm256_fmadd_ps(b1, _mm256_set1_ps(xb.s_hi), acc[n]);
        } else {
          const __m256i sum = chunk_dot<Bits, 0, 8>(ch, xb.q);
          acc[n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(a0, d), acc[n]);
          acc[n] = _mm256_fmadd_ps(b0, _mm256_set1_ps(xb.s), acc[n]);
        }
      }
    }
    for (int n = 0; n < N; ++n) {
      float* out = y + n * y_stride + 8 * h;
      if (rows == 8) {
        _mm256_storeu_ps(out, acc[n]);
      } else {
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, acc[n]);
        for (int r = 0; r < rows; ++r) out[r] = tmp[r];
      }
    }
  }
}

template <int Bits, bool Affine, bool Split16>
void gemm(const PackedFormat& f, const uint8_t* group, int64_t num_blocks, const ActBlock* x, int64_t num_tokens,
          float* y, int64_t y_stride, int valid_rows) {
  int64_t t = 0;
  for (; t + kTileTokens <= num_tokens; t += kTileTokens)
    tile<Bits, Affine, Split16, kTileTokens>(group, num_blocks, f.offset, x + t * num_blocks, y + t * y_stride,
                                             y_stride, valid_rows);
  const ActBlock* xt = x + t * num_blocks;
  float* yt = y + t * y_stride;
  switch (num_tokens - t) {
    case 0: break;
#define SLUICE_TAIL(n) \
  case n: tile<Bits, Affine, Split16, n>(group, num_blocks, f.offset, xt, yt, y_stride, valid_rows); break;
    SLUICE_TAIL(1) SLUICE_TAIL(2) SLUICE_TAIL(3) SLUICE_TAIL(4) SLUICE_TAIL(5) SLUICE_TAIL(6) SLUICE_TAIL(7)
#undef SLUICE_TAIL
  }
}

inline void group_gemm(const PackedFormat& f, const uint8_t* group, int64_t num_blocks, const ActBlock* x,
                       int64_t num_tokens, float* y, int64_t y_stride, int valid_rows) {
  switch (f.bits) {
    case 4:
      return f.affine ? gemm<4, true, false>(f, group, num_blocks, x, num_tokens, y, y_stride, valid_rows)
                      : gemm<4, false, false>(f, group, num_blocks, x, num_tokens, y, y_stride, valid_rows);
    case 5:
      return f.affine ? gemm<5, true, false>(f, group, num_blocks, x, num_tokens, y, y_stride, valid_rows)
                      : gemm<5, false, false>(f, group, num_blocks, x, num_tokens, y, y_stride, valid_rows);
    case 6: return gemm<6, false, true>(f, group, num_blocks, x, num_tokens, y, y_stride, valid_rows);
    default: return gemm<8, false, false>(f, group, num_blocks, x, num_tokens, y, y_stride, valid_rows);
  }
}

}  // namespace
}  // namespace sluice::backends::cpu::avx2
