#pragma once
// The inner loop of the CPU's float matmul (matmul.h): weights stored as F32, F16
// or BF16 against F32 activations. One call computes a tile: activation rows
// [t_begin, t_end) against weight rows [o_begin, o_end). Each weight row is widened
// to F32 once per tile (exactly: F16C / AVX-512 conversions where built with them,
// half.h's bit operations otherwise) and dotted with every activation row of the
// tile in one fixed order (16 lanes of fused multiply-adds, dot.h's lane split and
// reduction tree). Written once for the scalar and AVX-512 paths
// (float_matmul_impl.h, compiled by float_matmul_{scalar,avx512}.cpp) and once for
// AVX2 (float_matmul_avx2_tile.h: weights widened in registers, blocks of rows x
// tokens), all with -ffp-contract=off, so every path gives the same bits: the scalar
// path is the reference the others are tested against, and a row's result never
// depends on the tile or the thread split.
#include <cstddef>
#include <cstdint>

#include "backends/cpu/quant/cpu_features.h"
#include "backends/dtype.h"

namespace sluice::backends::cpu {

struct FloatMatmulArgs {
  const float* x;
  int64_t x_stride;  // floats between activation rows
  const std::byte* w;
  int64_t w_stride;  // bytes between weight rows
  DType w_dtype;     // F32, F16 or BF16
  float* y;
  int64_t y_stride;  // floats between output rows
  int64_t n;         // elements per row (`in`)
};

// Weight rows widened at once (and rows of scratch a tile needs).
inline constexpr int kFloatScratchRows = 6;

// scratch: kFloatScratchRows * n floats (the widened weight rows; unused for F32 weights).
using FloatMatmulTile = void (*)(const FloatMatmulArgs& args, int64_t t_begin, int64_t t_end, int64_t o_begin,
                                 int64_t o_end, float* scratch);

bool is_float_weight(DType dtype);  // F32, F16, BF16

// The tile of `path`; KernelPath::f32 (the reference numerics) gets the fastest
// runnable one, which is the same bits.
FloatMatmulTile float_matmul_tile(KernelPath path);
FloatMatmulTile scalar_float_matmul_tile();
FloatMatmulTile avx2_float_matmul_tile();
FloatMatmulTile avx512_float_matmul_tile();

}  // namespace sluice::backends::cpu
