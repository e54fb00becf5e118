#pragma once
// The integer kernels of one CPU path (cpu_features.h), behind one table so the
// matmul driver picks a path once. Every path gives bit-identical results: the
// integer sums are exact and the float epilogue below is the same operations in
// the same order on every path, so the scalar path is the reference the others
// are tested against, and batch invariance holds on each.
//
// Epilogue, per token, output row r and block k (in this order, fma = one
// rounding, starting from acc = 0):
//   acc = fma(float(Σ u q), a_r * d, acc)
//   acc = fma(b_r, s, acc)
// and for split16 formats the same twice, for the low half (Σ over elements 0-15,
// a_lo, s_lo) then the high half (a_hi, s_hi).
#include <cstdint>

#include "backends/cpu/quant/cpu_features.h"
#include "backends/cpu/quant/packed_format.h"

namespace sluice::backends::cpu {

struct QuantKernels {
  // out[t * num_blocks + k] = block k of row t of x; x rows `x_stride` floats apart,
  // cols = num_blocks * 32.
  void (*quantize_rows)(const float* x, int64_t x_stride, int64_t num_rows, int64_t num_blocks,
                        ActBlock* out);
  // y[t * y_stride + r] = dot(row r of the group, activation row t) for t in
  // [0, num_tokens), r in [0, valid_rows). x holds num_tokens rows of num_blocks blocks.
  void (*group_gemm)(const PackedFormat& format, const uint8_t* group, int64_t num_blocks, const ActBlock* x,
                     int64_t num_tokens, float* y, int64_t y_stride, int valid_rows);
};

const QuantKernels& quant_kernels(KernelPath path);

// Defined by each path's translation unit (x86 paths only on x86-64 builds).
const QuantKernels& scalar_quant_kernels();
const QuantKernels& avx2_quant_kernels();
const QuantKernels& avx2_vnni_quant_kernels();
const QuantKernels& avx512_vnni_quant_kernels();

}  // namespace sluice::backends::cpu
