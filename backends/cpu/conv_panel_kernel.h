#pragma once
// The inner loop of the CPU's panel convolutions (ops_signal.cpp): the same GEMM
// over `taps` shifted views of x as conv_kernel.h, laid out as an outer product.
// The weights come in panels of 16 output columns (backends/conv_panels.h, made at
// load); a vector holds 16 columns, one input is broadcast, and no reduction
// across lanes is needed, so a tile keeps 8 rows x 32 columns of outputs in
// registers (conv_kernel.h's row-dot tile: 4 x 4, and a 16-lane tree per output).
//
// Numerics, the same on every path (conv_panel_kernel_impl.h compiled per ISA):
// each output (row t, column c) is one fused multiply-add chain over its window, acc from +0,
// k = 0 .. taps * cin - 1 in order (tap j = k / cin, channel k % cin):
//   acc = fma(x[t + j * step, k % cin], w[c, k], acc)
//   out[t, c] = acc (+ bias[c % period], one F32 add)
// A row's value depends only on its own window: streaming equals one pass.
#include <cstdint>

#include "backends/cpu/quant/cpu_features.h"

namespace sluice::backends::cpu {

struct ConvPanelArgs {
  const float* x;      // [rows, x_stride] F32 input rows (cin used)
  int64_t x_stride;    // floats between input rows
  int64_t step;        // input rows between taps (the dilation)
  const float* w;      // conv_panels.h's panels
  int64_t cin;         // even: the tile steps through the inputs in pairs
  int64_t taps;
  const float* bias;   // [period] or null
  float* y;            // as ConvArgs: y[t * y_stride + (c / period) * phase_stride + c % period]
  int64_t y_stride;
  int64_t period;
  int64_t phase_stride;
};

// Output rows [t_begin, t_end) x columns [o_begin, o_end); o_begin a multiple of 16.
using ConvPanelTile = void (*)(const ConvPanelArgs& args, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end);

// The tile of `path`; KernelPath::f32 gets the fastest runnable one (same bits).
ConvPanelTile conv_panel_tile(KernelPath path);
ConvPanelTile scalar_conv_panel_tile();
ConvPanelTile avx2_conv_panel_tile();
ConvPanelTile avx512_conv_panel_tile();

}  // namespace sluice::backends::cpu
