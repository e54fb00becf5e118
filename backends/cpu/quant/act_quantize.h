#pragma once
// Quantizing one activation block, written once as plain C++ and included by
// each path's translation unit (compiled there with its own flags, so the loops
// vectorize for that ISA). Every operation is exact or IEEE-rounded the same way
// on every path: max|x| is exact, d = max/127 and 1/d are single roundings, and
// nearbyint rounds half to even, so all paths produce the same blocks.
#include <cmath>
#include <cstdint>

#include "backends/cpu/quant/packed_format.h"

namespace sluice::backends::cpu {
// Internal linkage: each ISA's translation unit gets its own copy compiled with its
// own flags, and the linker must never merge them into one (an AVX-512 copy called
// on an AVX2 machine would fault).
namespace {

inline void quantize_block(const float* __restrict x, ActBlock* __restrict out) {
  float amax = 0.0f;
  // `a > b ? a : b` is exactly what vector max instructions do (NaN included), so
  // the compiler may vectorize it without changing a result.
  for (int i = 0; i < kPackBlock; ++i) {
    const float ax = std::fabs(x[i]);
    amax = ax > amax ? ax : amax;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int32_t q[kPackBlock];
  for (int i = 0; i < kPackBlock; ++i) {
    const float v = std::nearbyint(x[i] * id);
    const float clamped = v < -127.0f ? -127.0f : (v > 127.0f ? 127.0f : v);
    q[i] = static_cast<int32_t>(clamped);
  }
  int32_t lo = 0, hi = 0;
  for (int i = 0; i < kPackBlock / 2; ++i) lo += q[i];
  for (int i = kPackBlock / 2; i < kPackBlock; ++i) hi += q[i];
  for (int i = 0; i < kPackBlock; ++i) out->q[i] = static_cast<int8_t>(q[i]);
  out->d = d;
  out->s = d * static_cast<float>(lo + hi);
  out->s_lo = d * static_cast<float>(lo);
  out->s_hi = d * static_cast<float>(hi);
}

inline void quantize_rows_portable(const float* x, int64_t x_stride, int64_t num_rows, int64_t num_blocks,
                                   ActBlock* out) {
  for (int64_t t = 0; t < num_rows; ++t)
    for (int64_t k = 0; k < num_blocks; ++k)
      quantize_block(x + t * x_stride + k * kPackBlock, out + t * num_blocks + k);
}

}  // namespace
}  // namespace sluice::backends::cpu
