#pragma once
// F32 dot products with one fixed accumulation order (attention's scores; the float
// matmul keeps the lane split and the reduction tree, with fused multiply-adds in
// the lanes). Element k of a row always goes to partial sum k % 16, partial sums
// are added in element order, and the 16 partials are reduced by a fixed tree
// (l + 8, then + 4, + 2, + 1). The loops have fixed widths so the compiler can
// vectorize them without reordering anything (lanes are independent), and the
// result for one row never depends on how many rows are computed together.
// Files including this are built with -ffp-contract=off so that `acc += w * x`
// is the same two roundings in every instantiation, with or without FMA hardware.
#include <cstdint>

namespace sluice::backends::cpu {
// Internal linkage: kernels built per ISA include this, and their copies must
// never be merged by the linker.
namespace {

inline constexpr int kDotLanes = 16;

inline float reduce_lanes(const float* acc) {
  float s8[8], s4[4], s2[2];
  for (int l = 0; l < 8; ++l) s8[l] = acc[l] + acc[l + 8];
  for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
  for (int l = 0; l < 2; ++l) s2[l] = s4[l] + s4[l + 2];
  return s2[0] + s2[1];
}

// out[r] = w · x[r] for R rows of n elements.
template <int R>
inline void dot_rows(const float* __restrict w, const float* const* x, int64_t n, float* out) {
  float acc[R][kDotLanes] = {};
  const float* xr[R];
  for (int r = 0; r < R; ++r) xr[r] = x[r];
  int64_t k = 0;
  for (; k + kDotLanes <= n; k += kDotLanes)
    for (int r = 0; r < R; ++r)
      for (int l = 0; l < kDotLanes; ++l) acc[r][l] += w[k + l] * xr[r][k + l];
  for (int l = 0; k + l < n; ++l)
    for (int r = 0; r < R; ++r) acc[r][l] += w[k + l] * xr[r][k + l];
  for (int r = 0; r < R; ++r) out[r] = reduce_lanes(acc[r]);
}

inline float dot(const float* a, const float* b, int64_t n) {
  float out;
  dot_rows<1>(a, &b, n, &out);
  return out;
}

}  // namespace
}  // namespace sluice::backends::cpu
