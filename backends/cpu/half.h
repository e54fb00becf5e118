#pragma once
// IEEE binary16 (F16) and bfloat16 (BF16) <-> binary32 conversions, written with
// integer bit operations only, so they are exact, portable and need no F16C (the
// row conversions use F16C / AVX-512 where the including file is built with them,
// which gives the same bits).
// Narrowing rounds to nearest, ties to even; NaN stays NaN (made quiet).
#include <bit>
#include <cstdint>
#if defined(__AVX512F__) || defined(__F16C__)
#include <immintrin.h>
#endif

namespace sluice::backends::cpu {
// Internal linkage: kernels built per ISA include this, and their copies must
// never be merged by the linker.
namespace {

inline float fp16_to_fp32(uint16_t h) {
  // Branch-free (masks, and a signed int -> float conversion) so that loops over
  // rows vectorize.
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7FFFu;  // exponent and mantissa
  // Normal numbers: move the fields into place and rebias the exponent (15 -> 127);
  // Inf/NaN (exponent 31) must land on exponent 255.
  const uint32_t is_inf_nan = 0u - static_cast<uint32_t>(em >= 0x7C00u);
  const uint32_t normal = (em << 13) + ((127u - 15u) << 23) + (is_inf_nan & ((128u - 16u) << 23));
  // Zero and subnormals: mantissa * 2^-24, exact in binary32.
  const float sub = static_cast<float>(static_cast<int32_t>(em)) * 0x1p-24f;
  const uint32_t is_sub = 0u - static_cast<uint32_t>(em < 0x0400u);
  const uint32_t bits = (std::bit_cast<uint32_t>(sub) & is_sub) | (normal & ~is_sub);
  return std::bit_cast<float>(sign | bits);
}

inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  if (ax >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {
    // Below 2^-14: a half subnormal. Scale to units of 2^-24 (exact) and round to an
    // integer, ties to even, by the 2^23 trick; 1024 becomes the smallest normal.
    const float scaled = std::bit_cast<float>(ax) * 0x1p24f;
    const uint32_t m = std::bit_cast<uint32_t>(scaled + 0x1p23f) - 0x4B000000u;
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t r = ax - ((127u - 15u) << 23);
  r += 0xFFFu + ((r >> 13) & 1u);  // round 23 mantissa bits to 10, ties to even
  return static_cast<uint16_t>(sign | (r >> 13));
}

inline float bf16_to_fp32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t fp32_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

// GCC 12 warns that _mm512_cvtph_ps reads an undefined source (it is masked off).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// n F16 / BF16 values as F32, exactly on every path (F16C / AVX-512 where the
// including translation unit is built with them).
inline void f16_row_to_f32(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
  for (; i < n; ++i) dst[i] = fp16_to_fp32(src[i]);
}
#pragma GCC diagnostic pop

inline void bf16_row_to_f32(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(src[i]);  // a shift: vectorizes
}

}  // namespace
}  // namespace sluice::backends::cpu
