#pragma once
// The inner loop of the CPU's causal convolutions (ops_signal.cpp): conv1d, and
// conv_transpose1d as one conv whose output columns are its s phases. A conv is
// a GEMM over `taps` shifted views of x, each tap reading a contiguous Cin run,
// so no im2col copy is made. One call computes a tile: output rows
// [t_begin, t_end) x output columns [o_begin, o_end).
//
// Numerics, the same on every path (conv_kernel_impl.h compiled per ISA):
//   out[t, c] = reduce_lanes(acc) (+ bias[c % period] when there is a bias)
// where lane l of acc (dot.h's 16 lanes and reduction tree) accumulates, tap by
// tap in order, the products w * x of the tap's elements k = l (mod 16) in order,
// each as one fused multiply-add (one rounding); the last partial block of 16 of
// each tap is zero-padded, and a padded lane adds fma(0, 0, acc). The scalar
// path calls std::fma (a libm call where the CPU has no FMA: slow, not wrong).
// A row's value depends only on its own window, never on the tile, the thread
// split or how many rows the call has: streaming chunk by chunk equals one pass.
//
// Fewer than 16 input channels (a codec encoder's first conv reads 1): each tap is
// one zero-padded block, so the row-dot tile spends its work on padding. Given the
// weights transposed (w_narrow), the tile instead runs 16 output columns side by
// side, each lane's chain of fused multiply-adds in the same order, then the same
// reduction tree over the lanes: the same bits, several times fewer instructions.
#include <cstdint>
#include <vector>

#include "backends/cpu/quant/cpu_features.h"

namespace sluice::backends::cpu {

struct ConvArgs {
  const float* x;     // [rows, cin]: the first output row's window starts at row 0
  int64_t x_stride;   // floats between input rows
  int64_t step;       // input rows between taps (the dilation)
  const float* w;     // [columns, taps * cin], tap-major within a row
  int64_t w_stride;   // floats between weight rows
  int64_t cin;
  int64_t taps;
  const float* bias;  // [period] or null: column c adds bias[c % period]
  float* y;           // output column c of row t: y[t * y_stride + (c / period) * phase_stride + c % period]
  int64_t y_stride;
  int64_t period;        // output channels (Cout)
  int64_t phase_stride;  // floats between phases (conv_transpose1d's out rows t*s + r); unused for conv1d
  // Null, or (cin < kDotLanes only) the weights transposed: w_narrow[k * narrow_columns + c]
  // = w[c * w_stride + k] for k < taps * cin, the columns zero-padded to a multiple of 16.
  const float* w_narrow = nullptr;
  int64_t narrow_columns = 0;
};

// w_narrow for `columns` weight rows of taps * cin elements (conv_kernel.h).
void transpose_narrow_weights(const float* w, int64_t w_stride, int64_t columns, int64_t k, std::vector<float>& out);

using ConvTile = void (*)(const ConvArgs& args, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end);

// The tile of `path`; KernelPath::f32 gets the fastest runnable one (same bits).
ConvTile conv_tile(KernelPath path);
ConvTile scalar_conv_tile();
ConvTile avx2_conv_tile();
ConvTile avx512_conv_tile();

}  // namespace sluice::backends::cpu
