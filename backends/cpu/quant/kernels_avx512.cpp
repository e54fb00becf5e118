// AVX-512 (F, BW, VL) + VNNI integer kernels. Built with those flags only in this
// translation unit; called only when cpu_features.cpp found them at run time.
// One 64-byte vector is one 4-element chunk of a block for all 16 rows of a group,
// so vpdpbusd (u8 x s8, 4 products summed per int32 lane) against the activation
// chunk broadcast to every lane yields 16 row sums at once; each decoded block is
// reused by every token of the tile.
#include <immintrin.h>
// GCC 12's own AVX-512 intrinsics headers trip -Wmaybe-uninitialized (a false
// positive on their internal __Y temporaries).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstring>

#include "backends/cpu/prefetch.h"
#include "backends/cpu/quant/act_quantize.h"
#include "backends/cpu/quant/quant_kernels.h"

namespace sluice::backends::cpu {
namespace {

constexpr int kTileTokens = 8;


inline __mmask64 load_mask(const uint8_t* p) {
  uint64_t m;
  std::memcpy(&m, p, 8);
  return _cvtu64_mask64(m);
}

inline int32_t load_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 8 chunk vectors (u8, one per 4 elements) of one block.
template <int Bits>
inline void decode(const uint8_t* block, __m512i ch[8]) {
  if constexpr (Bits == 8) {
    for (int c = 0; c < 8; ++c) ch[c] = _mm512_loadu_si512(block + 64 * c);
  } else {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    for (int p = 0; p < 4; ++p) {
      const __m512i v = _mm512_loadu_si512(block + 64 * p);
      ch[p] = _mm512_and_si512(v, low4);
      ch[p + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    }
    if constexpr (Bits >= 5) {
      const __m512i bit4 = _mm512_set1_epi8(0x10);
      for (int c = 0; c < 8; ++c)
        ch[c] = _mm512_or_si512(ch[c], _mm512_maskz_mov_epi8(load_mask(block + 256 + 8 * c), bit4));
    }
    if constexpr (Bits == 6) {
      const __m512i bit5 = _mm512_set1_epi8(0x20);
      for (int c = 0; c < 8; ++c)
        ch[c] = _mm512_or_si512(ch[c], _mm512_maskz_mov_epi8(load_mask(block + 320 + 8 * c), bit5));
    }
  }
}

// Σ u q over chunks [first, first + count) of the block; two chains for latency.
template <int First, int Count>
inline __m512i chunk_dot(const __m512i ch[8], const int8_t* q) {
  __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
  for (int c = First; c < First + Count; c += 2) {
    s0 = _mm512_dpbusd_epi32(s0, ch[c], _mm512_set1_epi32(load_i32(q + 4 * c)));
    s1 = _mm512_dpbusd_epi32(s1, ch[c + 1], _mm512_set1_epi32(load_i32(q + 4 * (c + 1))));
  }
  return _mm512_add_epi32(s0, s1);
}

template <int Bits, bool Affine, bool Split16, int N>
void tile(const uint8_t* group, int64_t num_blocks, float offset, const ActBlock* x, float* y, int64_t y_stride,
          int valid_rows) {
  using F = PackedLayout<Bits, Affine, Split16>;
  __m512 acc[N];
  for (int n = 0; n < N; ++n) acc[n] = _mm512_setzero_ps();
  const __m512 off = _mm512_set1_ps(offset);
  for (int64_t k = 0; k < num_blocks; ++k) {
    const uint8_t* block = group + k * F::kBlockBytes;
    prefetch_ahead<F::kBlockBytes>(block);
    __m512i ch[8];
    decode<Bits>(block, ch);
    const __m512 a0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + F::kScales)));
    __m512 a1 = a0;
    if constexpr (Split16)
      a1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + F::kScales + 32)));
    __m512 b0, b1 = a1;
    if constexpr (Affine) {
      b0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + F::kB)));
    } else {
      b0 = _mm512_mul_ps(a0, off);
      if constexpr (Split16) b1 = _mm512_mul_ps(a1, off);
    }
    for (int n = 0; n < N; ++n) {
      const ActBlock& xb = x[n * num_blocks + k];
      const __m512 d = _mm512_set1_ps(xb.d);
      if constexpr (Split16) {
        const __m512i lo = chunk_dot<0, 4>(ch, xb.q);
        const __m512i hi = chunk_dot<4, 4>(ch, xb.q);
        acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo), _mm512_mul_ps(a0, d), acc[n]);
        acc[n] = _mm512_fmadd_ps(b0, _mm512_set1_ps(xb.s_lo), acc[n]);
        acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(hi), _mm512_mul_ps(a1, d), acc[n]);
        acc[n] = _mm512_fmadd_ps(b1, _mm512_set1_ps(xb.s_hi), acc[n]);
      } else {
        const __m512i sum = chunk_dot<0, 8>(ch, xb.q);
        acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(a0, d), acc[n]);
        acc[n] = _mm512_fmadd_ps(b0, _mm512_set1_ps(xb.s), acc[n]);
      }
    }
  }
  const __mmask16 rows = static_cast<__mmask16>((1u << valid_rows) - 1);
  for (int n = 0; n < N; ++n) _mm512_mask_storeu_ps(y + n * y_stride, rows, acc[n]);
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

void group_gemm_avx512(const PackedFormat& f, const uint8_t* group, int64_t num_blocks, const ActBlock* x,
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

const QuantKernels& avx512_vnni_quant_kernels() {
  static const QuantKernels kernels{quantize_rows_portable, group_gemm_avx512};
  return kernels;
}

}  // namespace sluice::backends::cpu
