#pragma once
// SnakeBeta's row, y = x + inv_beta * sin(alpha * x)^2 (ops_signal.cpp's snake),
// built per ISA so its sin^2 runs in the widest vectors the CPU has: the codec
// decoder calls it on every activation of the vocoder (millions per frame). The
// same bits on every path: snake_row_impl.h's arithmetic is IEEE adds and
// multiplies only, built without contraction into FMAs.
#include <cstdint>

#include "backends/cpu/quant/cpu_features.h"

namespace sluice::backends::cpu {

using SnakeRow = void (*)(const float* x, const float* alpha, const float* inv_beta, float* y, int64_t n);

// The row of `path`; KernelPath::f32 gets the fastest runnable one (same bits).
SnakeRow snake_row(KernelPath path);
SnakeRow scalar_snake_row();
SnakeRow avx2_snake_row();
SnakeRow avx512_snake_row();

}  // namespace sluice::backends::cpu
