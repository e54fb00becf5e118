#pragma once
// Weight rows of any dtype the CPU backend reads, expanded to F32 with GGML's exact
// arithmetic (the same float operations in the same order as ggml's reference
// dequantizers and gguf-py's, so results are bit-identical to theirs).
#include <cstdint>

#include "backends/dtype.h"

namespace sluice::backends::cpu {

// Whether dequantize_row (and so matmul and embed) accepts this dtype:
// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K
// (Q5_0 because Gemma 3 Q4_K_M files use it for most attention/FFN tensors).
bool can_dequantize(DType dtype);

// dst[0, n) = the n values stored at src.  n must be a whole number of blocks.
void dequantize_row(DType dtype, const void* src, float* dst, int64_t n);

}  // namespace sluice::backends::cpu
