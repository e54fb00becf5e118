#pragma once
// float_matmul_kernel.h's tile, included by one translation unit per ISA. Its
// functions have internal linkage so the per-ISA copies never merge at link time.
#include <cstring>

#include "backends/cpu/float_matmul_kernel.h"
#include "backends/cpu/half.h"
#include "backends/cpu/dot.h"

namespace sluice::backends::cpu {
namespace {

constexpr int kMicroRows = 4;  // activation rows sharing each load of the weight row

// The widest vector the translation unit is built for. GCC keeps wider generic
// vectors (a 16-float one on AVX2) on the stack across loop iterations, so the
// 16 lanes of dot.h are held as kParts native vectors.
#if defined(__AVX512F__)
constexpr int kNativeLanes = 16;
#elif defined(__AVX__)
constexpr int kNativeLanes = 8;
#else
constexpr int kNativeLanes = 4;
#endif
constexpr int kParts = kDotLanes / kNativeLanes;
#pragma GCC diagnostic ignored "-Wpsabi"
using NativeLanes = float __attribute__((vector_size(kNativeLanes * sizeof(float))));

inline NativeLanes load_native(const float* p) {
  NativeLanes v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// dot.h's dot_rows with explicit vectors, so every ISA keeps the accumulators in
// registers (the compiler's own vectorization of dot_rows spills them): lane l
// sums the products of elements k = l (mod 16) in order, the tail is added lane
// by lane, then reduce_lanes. The same operations in the same order: the same bits.
template <int R>
inline void dot_rows_lanes(const float* w, const float* const* x, int64_t n, float* out) {
  NativeLanes acc[R][kParts] = {};
  int64_t k = 0;
  for (; k + kDotLanes <= n; k += kDotLanes) {
    for (int p = 0; p < kParts; ++p) {
      const NativeLanes wk = load_native(w + k + p * kNativeLanes);
      for (int r = 0; r < R; ++r) acc[r][p] += wk * load_native(x[r] + k + p * kNativeLanes);
    }
  }
  for (int r = 0; r < R; ++r) {
    float lanes[kDotLanes];
    std::memcpy(lanes, acc[r], sizeof(lanes));
    for (int l = 0; k + l < n; ++l) lanes[l] += w[k + l] * x[r][k + l];
    out[r] = reduce_lanes(lanes);
  }
}

// Weight row o as F32: the stored row itself for F32, else widened into scratch.
const float* weight_row(const FloatMatmulArgs& a, int64_t o, float* scratch) {
  const std::byte* row = a.w + o * a.w_stride;
  if (a.w_dtype == DType::F32) return reinterpret_cast<const float*>(row);
  const auto* halves = reinterpret_cast<const uint16_t*>(row);
  if (a.w_dtype == DType::F16) {
    f16_row_to_f32(halves, scratch, a.n);
  } else {
    bf16_row_to_f32(halves, scratch, a.n);
  }
  return scratch;
}

void float_tile(const FloatMatmulArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end,
                float* scratch) {
  for (int64_t o = o_begin; o < o_end; ++o) {
    const float* w = weight_row(a, o, scratch);
    int64_t t = t_begin;
    for (; t + kMicroRows <= t_end; t += kMicroRows) {
      const float* xs[kMicroRows];
      float out[kMicroRows];
      for (int r = 0; r < kMicroRows; ++r) xs[r] = a.x + (t + r) * a.x_stride;
      dot_rows_lanes<kMicroRows>(w, xs, a.n, out);
      for (int r = 0; r < kMicroRows; ++r) a.y[(t + r) * a.y_stride + o] = out[r];
    }
    for (; t < t_end; ++t) {
      const float* xs[1] = {a.x + t * a.x_stride};
      dot_rows_lanes<1>(w, xs, a.n, a.y + t * a.y_stride + o);
    }
  }
}

}  // namespace
}  // namespace sluice::backends::cpu
