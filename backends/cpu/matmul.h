#pragma once
// y = x · wᵀ on the CPU for every dtype dequantize_row accepts.
//
// Used for F32, F16 and BF16 weights on every path, and for every dtype on the f32
// reference path (quantized weights otherwise take quant/quant_matmul.h).
//
// Numerics: each weight row is expanded to F32 exactly (F16/BF16 widening, or
// dequantize_row, bit-identical to GGML's dequantizers), then dotted with the F32
// activation row in the fixed order of dot.h (float_matmul_kernel.h), the same
// bits on every ISA path. Activations are never quantized, so the only error
// against an exact dot of the dequantized weights is F32 rounding of the sum
// (relative to sum|w*x|, about n * 2^-24 worst case, ~sqrt(n) * 2^-24 typical).
// y[t][o] depends only on x[t] and w[o]: bit-identical whatever T is and however
// the pool splits the work.
#include "backends/cpu/quant/cpu_features.h"
#include "backends/tensor.h"

namespace sluice::backends::cpu {

class ThreadPool;

// x [T, in] F32; w [out, in] any dequantizable dtype; y [T, out] F32. Rows may be strided.
void matmul(ThreadPool& pool, KernelPath path, const Tensor& x, const Tensor& w, const Tensor& y);

}  // namespace sluice::backends::cpu
