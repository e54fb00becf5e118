#pragma once
// The inner loop of the CPU's int16 convolutions (ops_signal.cpp; the weight
// layout and the bounds that keep every tap's dot product an exact int32 are in
// backends/conv_int16.h). The same GEMM over `taps` shifted views of x as
// conv_kernel.h, on int16 rows padded to a multiple of 16.
//
// Numerics, the same on every path (conv_i16_kernel_impl.h compiled per ISA):
//   S_j = sum_c qw[c, j] * qx[t + j*step, c]            (exact int32)
//   acc = fma(float(S_j), x_scale[t + j*step], acc)     for j = 0, 1, ... in order, acc from 0
//   out[t, c] = fma(acc, w_scale[c], bias[c % period])  (acc * w_scale[c] without a bias)
// A row's value depends only on its own window: streaming equals one pass.
#include <cstdint>

#include "backends/cpu/quant/cpu_features.h"

namespace sluice::backends::cpu {

struct ConvI16Args {
  const int16_t* x;       // [rows, x_stride]: quantized input rows, padded_cin used
  const float* x_scale;   // [rows]: the real row is x_scale[t] * x[t]
  int64_t x_stride;       // int16 between input rows
  int64_t step;           // input rows between taps (the dilation)
  const int16_t* w;       // [columns, w_stride]: conv_int16.h's rows, the scale in the last two
  int64_t w_stride;       // int16 between weight rows (taps * padded_cin + 2)
  int64_t padded_cin;     // a multiple of 16
  int64_t taps;
  const float* bias;      // [period] or null
  float* y;               // as ConvArgs: y[t * y_stride + (c / period) * phase_stride + c % period]
  int64_t y_stride;
  int64_t period;
  int64_t phase_stride;
};

using ConvI16Tile = void (*)(const ConvI16Args& args, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end);

// The tile of `path`; every path gives the same bits (avx2-vnni runs the avx2 one).
ConvI16Tile conv_i16_tile(KernelPath path);
ConvI16Tile scalar_conv_i16_tile();
ConvI16Tile avx2_conv_i16_tile();
ConvI16Tile avx512_conv_i16_tile();

}  // namespace sluice::backends::cpu
