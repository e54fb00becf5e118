// The signal ops of the codec decoder: activations, clamp, bias, SnakeBeta and the
// causal convolutions. Every output element is a fixed-order sum over its own
// window (the convs: conv_kernel.h's order, or conv_panel_kernel.h's for weights in
// conv_panels.h's form; the same bits on every ISA path), so
// a row's value never depends on how many rows one call computes: decoding a
// stream chunk by chunk gives the same bits as one whole pass.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backends/conv_int16.h"
#include "backends/conv_panels.h"
#include "backends/cpu/conv_panel_kernel.h"
#include "backends/cpu/conv_i16_kernel.h"
#include "backends/cpu/conv_kernel.h"
#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/dot.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_common.h"
#include "backends/cpu/snake_row.h"

namespace sluice::backends::cpu {
namespace {

void check_unary(const Tensor& x, const Tensor& out, const char* what) {
  SLUICE_CHECK(x.dtype == DType::F32 && out.dtype == DType::F32 && same_shape(x, out), what);
}

template <class Fn>
void map_rows(ThreadPool& pool, const Tensor& x, const Tensor& out, Fn&& fn) {
  const int64_t n = x.cols();
  const Rows<const float> xr(x);
  const Rows<float> outr(out);
  for_each_row(pool, x.rows(), n, [&](int64_t r) {
    const float* xi = xr[r];
    float* yi = outr[r];
    for (int64_t k = 0; k < n; ++k) yi[k] = fn(xi[k], k);
  });
}

bool is_vector(const Tensor& t, int64_t n) { return t.dtype == DType::F32 && t.ndim == 1 && t.dim(0) == n; }

// Runs the conv tile over output rows [0, rows) x columns [0, columns), split
// into (row tile x column tile) items over the pool: a one-frame call (4 rows at
// 1536 channels) still has ~100 items for every thread, a long one reuses each
// weight block across a tile of rows. The split never changes a value. The panel
// tile computes 32 columns x 8 rows at once (conv_panel_kernel_impl.h), so it gets
// wider column tiles and a multiple of 8 rows.
template <int64_t kColumnTile = 16, int64_t kRowTile = 64, class Tile, class Args>
void run_conv(ThreadPool& pool, Tile tile, const Args& args, int64_t rows, int64_t columns) {
  if (rows == 0 || columns == 0) return;
  const int64_t row_tiles = (rows + kRowTile - 1) / kRowTile;
  const int64_t column_tiles = (columns + kColumnTile - 1) / kColumnTile;
  pool.parallel_for(row_tiles * column_tiles, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t0 = item / column_tiles * kRowTile, o0 = item % column_tiles * kColumnTile;
      tile(args, t0, std::min(rows, t0 + kRowTile), o0, std::min(columns, o0 + kColumnTile));
    }
  });
}

int64_t float_stride(const Tensor& t) { return static_cast<int64_t>(t.row_stride / sizeof(float)); }

// An F32 conv's arguments; with fewer than 16 input channels, its weights
// transposed into the scratch for the narrow tile (conv_kernel.h).
ConvArgs float_conv_args(ConvScratch& scratch, const Tensor& x, const Tensor& w, int64_t taps, int64_t step,
                         const Tensor& bias, const Tensor& out, int64_t y_stride, int64_t period, int64_t phase_stride) {
  ConvArgs args{.x = Rows<const float>(x)[0], .x_stride = float_stride(x), .step = step,
                .w = Rows<const float>(w)[0], .w_stride = float_stride(w), .cin = x.cols(), .taps = taps,
                .bias = bias ? Rows<const float>(bias)[0] : nullptr, .y = Rows<float>(out)[0],
                .y_stride = y_stride, .period = period, .phase_stride = phase_stride};
  if (args.cin < kDotLanes) {
    transpose_narrow_weights(args.w, args.w_stride, w.dim(0), taps * args.cin, scratch.w_narrow);
    args.w_narrow = scratch.w_narrow.data();
    args.narrow_columns = static_cast<int64_t>(scratch.w_narrow.size()) / (taps * args.cin);
  }
  return args;
}

// Quantizes x's rows for an int16 conv with `cin` inputs (backends/conv_int16.h):
// row t becomes scale[t] * q[t] with |q| <= the limit, rounded to nearest even
// (adding and subtracting 1.5 * 2^23 rounds a float below 2^22 to an integer), its
// channels padded with zeros. Depends on the row alone, and is built once for
// every path, so a row quantizes to the same bits in any call.
void quantize_rows(ThreadPool& pool, const Tensor& x, ConvScratch& scratch) {
  const int64_t cin = x.cols(), pc = int16_conv_padded_cin(cin), rows = x.rows();
  const float limit = static_cast<float>(int16_conv_limit(cin));
  scratch.x.resize(static_cast<size_t>(rows * pc));
  scratch.scale.resize(static_cast<size_t>(rows));
  const Rows<const float> xr(x);
  for_each_row(pool, rows, cin, [&](int64_t t) {
    const float* xi = xr[t];
    int16_t* q = scratch.x.data() + t * pc;
    float peak = 0.0f;
    for (int64_t c = 0; c < cin; ++c) peak = std::max(peak, std::fabs(xi[c]));
    const float inv = peak > 0.0f ? limit / peak : 0.0f;
    scratch.scale[static_cast<size_t>(t)] = peak / limit;
    constexpr float kRound = 0x1.8p23f;
    for (int64_t c = 0; c < cin; ++c) {
      const float v = std::min(std::max(xi[c] * inv, -limit), limit);
      q[c] = static_cast<int16_t>(static_cast<int32_t>((v + kRound) - kRound));
    }
    for (int64_t c = cin; c < pc; ++c) q[c] = 0;
  });
}

// conv_int16.h's weight rows for `cin` inputs: the taps they hold, checked.
int64_t int16_conv_taps(const Tensor& w, int64_t cin, const char* what) {
  const int64_t pc = int16_conv_padded_cin(cin);
  SLUICE_CHECK(w.ndim == 2 && w.cols() >= pc + 2 && (w.cols() - 2) % pc == 0, what);
  return (w.cols() - 2) / pc;
}

ConvI16Args int16_conv_args(const ConvScratch& s, const Tensor& w, int64_t cin, int64_t taps, int64_t step,
                            const Tensor& bias, const Tensor& out, int64_t y_stride, int64_t period, int64_t phase_stride) {
  return ConvI16Args{.x = s.x.data(), .x_scale = s.scale.data(), .x_stride = int16_conv_padded_cin(cin), .step = step,
                     .w = Rows<const int16_t>(w)[0], .w_stride = static_cast<int64_t>(w.row_stride / sizeof(int16_t)),
                     .padded_cin = int16_conv_padded_cin(cin), .taps = taps,
                     .bias = bias ? Rows<const float>(bias)[0] : nullptr, .y = Rows<float>(out)[0],
                     .y_stride = y_stride, .period = period, .phase_stride = phase_stride};
}

// conv_panels.h's F32 [panels, taps * cin, 16], told from backend.h's 2-D weight by its rank.
bool is_panel_weight(const Tensor& w) { return w.dtype == DType::F32 && w.ndim == 3; }

// The panel weight's taps, its shape checked for `columns` output columns.
int64_t panel_conv_taps(const Tensor& w, int64_t cin, int64_t columns, const char* what) {
  SLUICE_CHECK(w.dim(0) == conv_panel_count(columns) && w.dim(2) == kConvPanelColumns && cin % 2 == 0 &&
                   w.dim(1) % cin == 0,
               what);
  return w.dim(1) / cin;
}

void run_panel_conv(ThreadPool& pool, KernelPath path, const Tensor& x, const Tensor& w, int64_t taps, int64_t step,
                    const Tensor& bias, const Tensor& out, int64_t y_stride, int64_t period, int64_t phase_stride,
                    int64_t rows, int64_t columns) {
  const ConvPanelArgs args{.x = Rows<const float>(x)[0], .x_stride = float_stride(x), .step = step,
                           .w = Rows<const float>(w)[0], .cin = x.cols(), .taps = taps,
                           .bias = bias ? Rows<const float>(bias)[0] : nullptr, .y = Rows<float>(out)[0],
                           .y_stride = y_stride, .period = period, .phase_stride = phase_stride};
  run_conv<32, 56>(pool, conv_panel_tile(path), args, rows, columns);
}

}  // namespace

void activate(ThreadPool& pool, const Tensor& x, Backend::Activation act, const Tensor& out) {
  check_unary(x, out, "activate: x, out must be F32 of one shape");
  using Act = Backend::Activation;
  switch (act) {
    case Act::silu: map_rows(pool, x, out, [](float v, int64_t) { return v / (1.0f + std::exp(-v)); }); break;
    case Act::gelu_erf:
      map_rows(pool, x, out, [](float v, int64_t) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); });
      break;
    case Act::elu: map_rows(pool, x, out, [](float v, int64_t) { return v > 0.0f ? v : std::expm1(v); }); break;
    case Act::sigmoid: map_rows(pool, x, out, [](float v, int64_t) { return 1.0f / (1.0f + std::exp(-v)); }); break;
    case Act::tanh: map_rows(pool, x, out, [](float v, int64_t) { return std::tanh(v); }); break;
    case Act::sqrt: map_rows(pool, x, out, [](float v, int64_t) { return std::sqrt(v); }); break;
    case Act::log: map_rows(pool, x, out, [](float v, int64_t) { return std::log(v); }); break;
  }
}

void clamp(ThreadPool& pool, const Tensor& x, float lo, float hi, const Tensor& out) {
  check_unary(x, out, "clamp: x, out must be F32 of one shape");
  map_rows(pool, x, out, [lo, hi](float v, int64_t) { return std::min(std::max(v, lo), hi); });
}

void add_bias(ThreadPool& pool, const Tensor& x, const Tensor& bias, const Tensor& out) {
  check_unary(x, out, "add_bias: x, out must be F32 of one shape");
  SLUICE_CHECK(is_vector(bias, x.cols()), "add_bias: bias must be F32 [cols]");
  const float* b = Rows<const float>(bias)[0];
  map_rows(pool, x, out, [b](float v, int64_t k) { return v + b[k]; });
}

void snake(ThreadPool& pool, KernelPath path, const Tensor& x, const Tensor& alpha, const Tensor& inv_beta, const Tensor& out) {
  check_unary(x, out, "snake: x, out must be F32 of one shape");
  SLUICE_CHECK(is_vector(alpha, x.cols()) && is_vector(inv_beta, x.cols()),
               "snake: alpha, inv_beta must be F32 [channels]");
  const float* a = Rows<const float>(alpha)[0];
  const float* ib = Rows<const float>(inv_beta)[0];
  const int64_t n = x.cols();
  const Rows<const float> xr(x);
  const Rows<float> outr(out);
  const SnakeRow row = snake_row(path);
  for_each_row(pool, x.rows(), n, [&](int64_t r) { row(xr[r], a, ib, outr[r], n); });
}

void conv1d(ThreadPool& pool, KernelPath path, ConvScratch& scratch, const Tensor& x, const Tensor& w, const Tensor& bias,
            int dilation, const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && (w.dtype == DType::F32 || w.dtype == DType::I16) &&
                   out.dtype == DType::F32 && x.ndim == 2 && (w.ndim == 2 || is_panel_weight(w)) && out.ndim == 2,
               "conv1d: x, out must be 2-D F32, w 2-D F32 or I16, or F32 panels");
  SLUICE_CHECK(dilation >= 1, "conv1d: dilation must be positive");
  if (is_panel_weight(w)) {
    const int64_t cout = out.cols();
    const int64_t taps = panel_conv_taps(w, x.cols(), cout, "conv1d: panel w must be for Cout columns, Cin even");
    SLUICE_CHECK(x.rows() == out.rows() + (taps - 1) * dilation,
                 "conv1d: x must be [T + (k-1)*dilation, Cin] and out [T, Cout]");
    SLUICE_CHECK(!bias || is_vector(bias, cout), "conv1d: bias must be F32 [Cout]");
    run_panel_conv(pool, path, x, w, taps, dilation, bias, out, float_stride(out), cout, 0, out.rows(), cout);
    return;
  }
  const int64_t cin = x.cols(), cout = w.dim(0);
  const int64_t taps = w.dtype == DType::I16 ? int16_conv_taps(w, cin, "conv1d: I16 w must be [Cout, k*padded(Cin) + 2]")
                                             : w.cols() / cin;
  SLUICE_CHECK(w.dtype == DType::I16 || w.cols() % cin == 0, "conv1d: w must be [Cout, k*Cin]");
  SLUICE_CHECK(out.cols() == cout && x.rows() == out.rows() + (taps - 1) * dilation,
               "conv1d: x must be [T + (k-1)*dilation, Cin] and out [T, Cout]");
  SLUICE_CHECK(!bias || is_vector(bias, cout), "conv1d: bias must be F32 [Cout]");
  if (w.dtype == DType::I16) {
    quantize_rows(pool, x, scratch);
    run_conv(pool, conv_i16_tile(path),
             int16_conv_args(scratch, w, cin, taps, dilation, bias, out, float_stride(out), cout, 0), out.rows(), cout);
    return;
  }
  const ConvArgs args = float_conv_args(scratch, x, w, taps, dilation, bias, out, float_stride(out), cout, 0);
  run_conv(pool, conv_tile(path), args, out.rows(), cout);
}

void depthwise_conv1d(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && w.dtype == DType::F32 && out.dtype == DType::F32 &&
                   x.ndim == 2 && w.ndim == 2 && out.ndim == 2,
               "depthwise_conv1d: x, w, out must be 2-D F32");
  const int64_t channels = x.cols(), taps = w.cols();
  SLUICE_CHECK(w.dim(0) == channels && out.cols() == channels && x.rows() == out.rows() + taps - 1,
               "depthwise_conv1d: x [T + k - 1, C], w [C, k], out [T, C]");
  SLUICE_CHECK(!bias || is_vector(bias, channels), "depthwise_conv1d: bias must be F32 [C]");
  const Rows<const float> xr(x), wr(w);
  const Rows<float> outr(out);
  const float* b = bias ? Rows<const float>(bias)[0] : nullptr;
  for_each_row(pool, out.rows(), channels * taps, [&](int64_t t) {
    float* y = outr[t];
    for (int64_t c = 0; c < channels; ++c) y[c] = b ? b[c] : 0.0f;
    for (int64_t j = 0; j < taps; ++j) {
      const float* xj = xr[t + j];
      for (int64_t c = 0; c < channels; ++c) y[c] += wr[c][j] * xj[c];
    }
  });
}

void conv_transpose1d(ThreadPool& pool, KernelPath path, ConvScratch& scratch, const Tensor& x, const Tensor& w,
                      const Tensor& bias, int stride, const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && (w.dtype == DType::F32 || w.dtype == DType::I16) &&
                   out.dtype == DType::F32 && x.ndim == 2 && (w.ndim == 2 || is_panel_weight(w)) && out.ndim == 2,
               "conv_transpose1d: x, out must be 2-D F32, w 2-D F32 or I16, or F32 panels");
  const int64_t cin = x.cols(), cout = out.cols();
  if (is_panel_weight(w)) {
    SLUICE_CHECK(stride >= 1, "conv_transpose1d: stride must be positive");
    const int64_t taps = panel_conv_taps(w, cin, stride * cout,
                                         "conv_transpose1d: panel w must be for stride*Cout columns, Cin even");
    SLUICE_CHECK(out.rows() % stride == 0 && x.rows() == out.rows() / stride + taps - 1,
                 "conv_transpose1d: x must be [T + m - 1, Cin] and out [T*stride, Cout]");
    SLUICE_CHECK(!bias || is_vector(bias, cout), "conv_transpose1d: bias must be F32 [Cout]");
    run_panel_conv(pool, path, x, w, taps, 1, bias, out, stride * float_stride(out), cout, float_stride(out),
                  out.rows() / stride, stride * cout);
    return;
  }
  SLUICE_CHECK(stride >= 1 && w.dim(0) == stride * cout, "conv_transpose1d: w must have stride*Cout rows");
  const int64_t taps = w.dtype == DType::I16
                           ? int16_conv_taps(w, cin, "conv_transpose1d: I16 w must be [stride*Cout, m*padded(Cin) + 2]")
                           : w.cols() / cin;
  SLUICE_CHECK(w.dtype == DType::I16 || w.cols() % cin == 0, "conv_transpose1d: w must be [stride*Cout, m*Cin]");
  SLUICE_CHECK(out.rows() % stride == 0 && x.rows() == out.rows() / stride + taps - 1,
               "conv_transpose1d: x must be [T + m - 1, Cin] and out [T*stride, Cout]");
  SLUICE_CHECK(!bias || is_vector(bias, cout), "conv_transpose1d: bias must be F32 [Cout]");
  // Output row t*s + r, channel o is column r*Cout + o of a conv with s*Cout columns.
  if (w.dtype == DType::I16) {
    quantize_rows(pool, x, scratch);
    run_conv(pool, conv_i16_tile(path),
             int16_conv_args(scratch, w, cin, taps, 1, bias, out, stride * float_stride(out), cout, float_stride(out)),
             out.rows() / stride, stride * cout);
    return;
  }
  const ConvArgs args =
      float_conv_args(scratch, x, w, taps, 1, bias, out, stride * float_stride(out), cout, float_stride(out));
  run_conv(pool, conv_tile(path), args, out.rows() / stride, stride * cout);
}

void transpose_narrow_weights(const float* w, int64_t w_stride, int64_t columns, int64_t k, std::vector<float>& out) {
  const int64_t padded = (columns + kDotLanes - 1) / kDotLanes * kDotLanes;
  out.assign(static_cast<size_t>(k * padded), 0.0f);
  for (int64_t c = 0; c < columns; ++c)
    for (int64_t i = 0; i < k; ++i) out[static_cast<size_t>(i * padded + c)] = w[c * w_stride + i];
}

ConvTile conv_tile(KernelPath path) {
#if defined(SLUICE_X86_KERNELS)
  if (path == KernelPath::f32) path = runnable_kernel_paths().back();
  if (path == KernelPath::avx512_vnni) return avx512_conv_tile();
  if (path == KernelPath::avx2 || path == KernelPath::avx2_vnni) return avx2_conv_tile();
#endif
  (void)path;
  return scalar_conv_tile();
}

SnakeRow snake_row(KernelPath path) {
#if defined(SLUICE_X86_KERNELS)
  if (path == KernelPath::f32) path = runnable_kernel_paths().back();
  if (path == KernelPath::avx512_vnni) return avx512_snake_row();
  if (path != KernelPath::scalar) return avx2_snake_row();
#endif
  (void)path;
  return scalar_snake_row();
}

ConvPanelTile conv_panel_tile(KernelPath path) {
#if defined(SLUICE_X86_KERNELS)
  if (path == KernelPath::f32) path = runnable_kernel_paths().back();
  if (path == KernelPath::avx512_vnni) return avx512_conv_panel_tile();
  if (path != KernelPath::scalar) return avx2_conv_panel_tile();
#endif
  (void)path;
  return scalar_conv_panel_tile();
}

ConvI16Tile conv_i16_tile(KernelPath path) {
#if defined(SLUICE_X86_KERNELS)
  if (path == KernelPath::f32) path = runnable_kernel_paths().back();
  if (path == KernelPath::avx512_vnni) return avx512_conv_i16_tile();
  if (path != KernelPath::scalar) return avx2_conv_i16_tile();
#endif
  (void)path;
  return scalar_conv_i16_tile();
}

}  // namespace sluice::backends::cpu
