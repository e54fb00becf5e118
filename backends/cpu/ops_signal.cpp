// The signal ops of the codec decoder: activations, clamp, bias, SnakeBeta and the
// causal convolutions. Every output element is a fixed-order sum over its own
// window (taps in order, each tap a dot.h dot product over the input channels),
// so a row's value never depends on how many rows one call computes: decoding a
// stream chunk by chunk gives the same bits as one whole pass.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/dot.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_common.h"

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

// out[t, o] = bias[o] + sum_j w[o, j*cin:(j+1)*cin] . x[t + j*step], for rows
// [0, rows) and the weight rows [w_begin, w_begin + cout), written to out rows
// out_row(t).  Rows go four at a time through dot_rows, whose result per row does
// not depend on the group size.
template <class OutRow>
void conv_rows(ThreadPool& pool, const Tensor& x, const Tensor& w, int64_t w_begin, int64_t cout,
               const Tensor& bias, int64_t taps, int64_t step, int64_t rows, OutRow&& out_row) {
  const int64_t cin = x.cols();
  const Rows<const float> xr(x), wr(w);
  const float* b = bias ? Rows<const float>(bias)[0] : nullptr;
  constexpr int64_t kGroup = 4;
  const int64_t groups = (rows + kGroup - 1) / kGroup;
  // Split over output channels too, so a one-frame call still uses every thread.
  constexpr int64_t kChannelBlock = 64;
  const int64_t channel_blocks = (cout + kChannelBlock - 1) / kChannelBlock;
  pool.parallel_for(groups * channel_blocks, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t0 = (item / channel_blocks) * kGroup;
      const int64_t o0 = (item % channel_blocks) * kChannelBlock;
      const int64_t n_rows = std::min(kGroup, rows - t0);
      const int64_t o1 = std::min(cout, o0 + kChannelBlock);
      for (int64_t o = o0; o < o1; ++o) {
        const float* wo = wr[w_begin + o];
        float sum[kGroup];
        for (int64_t r = 0; r < kGroup; ++r) sum[r] = b ? b[o] : 0.0f;
        for (int64_t j = 0; j < taps; ++j) {
          const float* xs[kGroup];
          for (int64_t r = 0; r < kGroup; ++r) xs[r] = xr[t0 + std::min(r, n_rows - 1) + j * step];
          float part[kGroup];
          dot_rows<kGroup>(wo + j * cin, xs, cin, part);
          for (int64_t r = 0; r < kGroup; ++r) sum[r] += part[r];
        }
        for (int64_t r = 0; r < n_rows; ++r) out_row(t0 + r)[o] = sum[r];
      }
    }
  });
}

}  // namespace

void activate(ThreadPool& pool, const Tensor& x, Backend::Activation act, const Tensor& out) {
  check_unary(x, out, "activate: x, out must be F32 of one shape");
  if (act == Backend::Activation::silu) {
    map_rows(pool, x, out, [](float v, int64_t) { return v / (1.0f + std::exp(-v)); });
  } else {
    map_rows(pool, x, out, [](float v, int64_t) { return 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); });
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

void snake(ThreadPool& pool, const Tensor& x, const Tensor& alpha, const Tensor& inv_beta, const Tensor& out) {
  check_unary(x, out, "snake: x, out must be F32 of one shape");
  SLUICE_CHECK(is_vector(alpha, x.cols()) && is_vector(inv_beta, x.cols()),
               "snake: alpha, inv_beta must be F32 [channels]");
  const float* a = Rows<const float>(alpha)[0];
  const float* ib = Rows<const float>(inv_beta)[0];
  map_rows(pool, x, out, [a, ib](float v, int64_t c) {
    const float s = std::sin(a[c] * v);
    return v + ib[c] * (s * s);
  });
}

void conv1d(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor& bias, int dilation, const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && w.dtype == DType::F32 && out.dtype == DType::F32 &&
                   x.ndim == 2 && w.ndim == 2 && out.ndim == 2,
               "conv1d: x, w, out must be 2-D F32");
  const int64_t cin = x.cols(), cout = w.dim(0);
  SLUICE_CHECK(dilation >= 1 && w.cols() % cin == 0, "conv1d: w must be [Cout, k*Cin]");
  const int64_t taps = w.cols() / cin;
  SLUICE_CHECK(out.cols() == cout && x.rows() == out.rows() + (taps - 1) * dilation,
               "conv1d: x must be [T + (k-1)*dilation, Cin] and out [T, Cout]");
  SLUICE_CHECK(!bias || is_vector(bias, cout), "conv1d: bias must be F32 [Cout]");
  const Rows<float> outr(out);
  conv_rows(pool, x, w, 0, cout, bias, taps, dilation, out.rows(), [&](int64_t t) { return outr[t]; });
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

void conv_transpose1d(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor& bias, int stride,
                      const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && w.dtype == DType::F32 && out.dtype == DType::F32 &&
                   x.ndim == 2 && w.ndim == 2 && out.ndim == 2,
               "conv_transpose1d: x, w, out must be 2-D F32");
  const int64_t cin = x.cols(), cout = out.cols();
  SLUICE_CHECK(stride >= 1 && w.dim(0) == stride * cout && w.cols() % cin == 0,
               "conv_transpose1d: w must be [stride*Cout, m*Cin]");
  const int64_t taps = w.cols() / cin;
  SLUICE_CHECK(out.rows() % stride == 0 && x.rows() == out.rows() / stride + taps - 1,
               "conv_transpose1d: x must be [T + m - 1, Cin] and out [T*stride, Cout]");
  SLUICE_CHECK(!bias || is_vector(bias, cout), "conv_transpose1d: bias must be F32 [Cout]");
  const Rows<float> outr(out);
  const int64_t frames = out.rows() / stride;
  for (int64_t r = 0; r < stride; ++r)
    conv_rows(pool, x, w, r * cout, cout, bias, taps, 1, frames, [&](int64_t t) { return outr[t * stride + r]; });
}

}  // namespace sluice::backends::cpu
