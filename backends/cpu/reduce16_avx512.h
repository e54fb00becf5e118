#pragma once
// Sixteen of dot.h's 16-lane partial-sum vectors reduced at once, in vectors: each
// stage of reduce_lanes's tree (lane l + 8 onto l, then + 4, + 2, + 1) adds the same
// lane pairs for all sixteen, so every result has reduce_lanes's bits. For AVX-512
// translation units only (the float matmul's 4x4 tiles, attention's 16-key blocks),
// where sixteen scalar reductions would cost as much as a short row's products.
#include <immintrin.h>

namespace sluice::backends::cpu {
// Internal linkage: kernels built per ISA include this.
namespace {

// Lane 4 * (i % 4) + i / 4 of the result holds reduce_lanes(acc[i]).
inline __m512 reduce16(const __m512 (&acc)[16]) {
  // Stage 1, pairs (a, b) -> [a's 8 | b's 8].
  __m512 s1[8];
  for (int j = 0; j < 8; ++j)
    s1[j] = _mm512_add_ps(_mm512_shuffle_f32x4(acc[2 * j], acc[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_f32x4(acc[2 * j], acc[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Stage 2: 128-bit block b of s2[m] is acc[4m + b]'s 4.
  __m512 s2[4];
  for (int m = 0; m < 4; ++m)
    s2[m] = _mm512_add_ps(_mm512_shuffle_f32x4(s1[2 * m], s1[2 * m + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_f32x4(s1[2 * m], s1[2 * m + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  // Stage 3: block b of s3[i] holds acc[8i + b]'s 2, then acc[8i + 4 + b]'s 2.
  __m512 s3[2];
  for (int i = 0; i < 2; ++i)
    s3[i] = _mm512_add_ps(_mm512_shuffle_ps(s2[2 * i], s2[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                          _mm512_shuffle_ps(s2[2 * i], s2[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // Stage 4: block b = [acc[b], acc[4 + b], acc[8 + b], acc[12 + b]].
  return _mm512_add_ps(_mm512_shuffle_ps(s3[0], s3[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(s3[0], s3[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

}  // namespace
}  // namespace sluice::backends::cpu
