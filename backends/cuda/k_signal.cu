// The signal ops (codec decoder, speaker encoder): element-wise activations, clamp, bias, SnakeBeta,
// the depthwise conv, and one tiled conv for conv1d and conv_transpose1d. Full-
// precision libm functions (expf, expm1f, erff, sinf, tanhf, logf: a few ulp, like the CPU's), never
// the approximate intrinsics. Each conv output is one sequential F32 fmaf chain
// over (tap, channel) in order from its bias-free zero, then + bias: a row's value
// depends only on its window, so streaming chunk by chunk gives the same bits
// as one pass on the GPU too.
#include "backends/cuda/kernels.h"

namespace sluice::backends::cuda {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(long long n) {
  const long long blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

enum class Unary { silu, gelu_erf, elu, sigmoid, tanh, sqrt, log, clamp, add_bias, snake };

struct UnaryParams {
  float lo = 0, hi = 0;
  const float* bias = nullptr;
  const float* alpha = nullptr;
  const float* inv_beta = nullptr;
};

template <Unary kOp>
__global__ void unary_kernel(const float* x, long long x_stride, float* out, long long out_stride, long long rows,
                             long long cols, UnaryParams p) {
  const long long n = rows * cols;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / cols;
    const long long c = i - r * cols;
    const float v = x[r * x_stride + c];
    float y;
    if constexpr (kOp == Unary::silu) {
      y = v / (1.0f + expf(-v));
    } else if constexpr (kOp == Unary::gelu_erf) {
      y = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    } else if constexpr (kOp == Unary::elu) {
      y = v > 0.0f ? v : expm1f(v);
    } else if constexpr (kOp == Unary::sigmoid) {
      y = 1.0f / (1.0f + expf(-v));
    } else if constexpr (kOp == Unary::tanh) {
      y = tanhf(v);
    } else if constexpr (kOp == Unary::sqrt) {
      y = sqrtf(v);
    } else if constexpr (kOp == Unary::log) {
      y = logf(v);
    } else if constexpr (kOp == Unary::clamp) {
      y = fminf(fmaxf(v, p.lo), p.hi);
    } else if constexpr (kOp == Unary::add_bias) {
      y = v + p.bias[c];
    } else {
      const float s = sinf(p.alpha[c] * v);
      y = v + p.inv_beta[c] * (s * s);
    }
    out[r * out_stride + c] = y;
  }
}

template <Unary kOp>
void launch_unary(const float* x, int64_t x_stride, float* out, int64_t out_stride, Rows2D shape, UnaryParams p,
                  cudaStream_t stream) {
  const long long n = shape.rows * shape.cols;
  if (n == 0) return;
  unary_kernel<kOp><<<grid_for(n), kThreads, 0, stream>>>(x, x_stride, out, out_stride, shape.rows, shape.cols, p);
}

__global__ void depthwise_kernel(const float* x, long long x_stride, const float* w, long long w_stride, int taps,
                                 const float* bias, float* out, long long out_stride, long long rows, long long cols) {
  const long long n = rows * cols;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long t = i / cols;
    const long long c = i - t * cols;
    float sum = bias ? bias[c] : 0.0f;
    for (int j = 0; j < taps; ++j) sum = fmaf(w[c * w_stride + j], x[(t + j) * x_stride + c], sum);
    out[t * out_stride + c] = sum;
  }
}

// A block computes kTileRows output rows x kTileCols columns, 4 x 4 per thread,
// staging kTileK elements of the (tap, channel) axis of x and w in shared memory
// per round. Element kk of the axis is tap kk / cin, channel kk % cin: x's row
// for output row t is t + tap * step, so no im2col copy is made.
constexpr int kTileRows = 64, kTileCols = 64, kTileK = 16;
constexpr int kConvThreads = (kTileRows / 4) * (kTileCols / 4);  // 256

__global__ void __launch_bounds__(kConvThreads) conv_kernel(ConvLaunch a) {
  __shared__ float xs[kTileK][kTileRows + 1];
  __shared__ float ws[kTileK][kTileCols + 1];
  const long long t0 = static_cast<long long>(blockIdx.y) * kTileRows;
  const long long c0 = static_cast<long long>(blockIdx.x) * kTileCols;
  const int tx = threadIdx.x % (kTileCols / 4), ty = threadIdx.x / (kTileCols / 4);
  const long long k_total = a.cin * a.taps;
  float acc[4][4] = {};
  for (long long k0 = 0; k0 < k_total; k0 += kTileK) {
    // kTileK x 64 elements of each tile, 256 threads: 4 each.
    for (int e = threadIdx.x; e < kTileK * kTileRows; e += kConvThreads) {
      const int kk = e % kTileK, rr = e / kTileK;
      const long long k = k0 + kk, t = t0 + rr;
      float v = 0.0f;
      if (k < k_total && t < a.rows) {
        const long long tap = k / a.cin, ch = k - tap * a.cin;
        v = a.x[(t + tap * a.step) * a.x_stride + ch];
      }
      xs[kk][rr] = v;
    }
    for (int e = threadIdx.x; e < kTileK * kTileCols; e += kConvThreads) {
      const int kk = e % kTileK, cc = e / kTileK;
      const long long k = k0 + kk, c = c0 + cc;
      ws[kk][cc] = k < k_total && c < a.columns ? a.w[c * a.w_stride + k] : 0.0f;
    }
    __syncthreads();
    const int k_here = static_cast<int>(k_total - k0 < kTileK ? k_total - k0 : kTileK);
    for (int kk = 0; kk < k_here; ++kk) {
      float xv[4], wv[4];
      for (int i = 0; i < 4; ++i) xv[i] = xs[kk][ty * 4 + i];
      for (int j = 0; j < 4; ++j) wv[j] = ws[kk][tx * 4 + j];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(wv[j], xv[i], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const long long t = t0 + ty * 4 + i;
    if (t >= a.rows) continue;
    for (int j = 0; j < 4; ++j) {
      const long long c = c0 + tx * 4 + j;
      if (c >= a.columns) continue;
      const long long phase = c / a.period, channel = c - phase * a.period;
      float sum = acc[i][j];
      if (a.bias) sum += a.bias[channel];
      a.y[t * a.y_stride + phase * a.phase_stride + channel] = sum;
    }
  }
}

}  // namespace

void launch_activate(SignalActivation act, const float* x, int64_t x_stride, float* out, int64_t out_stride,
                     Rows2D shape, cudaStream_t stream) {
  switch (act) {
    case SignalActivation::silu: launch_unary<Unary::silu>(x, x_stride, out, out_stride, shape, {}, stream); break;
    case SignalActivation::gelu_erf:
      launch_unary<Unary::gelu_erf>(x, x_stride, out, out_stride, shape, {}, stream);
      break;
    case SignalActivation::elu: launch_unary<Unary::elu>(x, x_stride, out, out_stride, shape, {}, stream); break;
    case SignalActivation::sigmoid:
      launch_unary<Unary::sigmoid>(x, x_stride, out, out_stride, shape, {}, stream);
      break;
    case SignalActivation::tanh: launch_unary<Unary::tanh>(x, x_stride, out, out_stride, shape, {}, stream); break;
    case SignalActivation::sqrt: launch_unary<Unary::sqrt>(x, x_stride, out, out_stride, shape, {}, stream); break;
    case SignalActivation::log: launch_unary<Unary::log>(x, x_stride, out, out_stride, shape, {}, stream); break;
  }
}

void launch_clamp(const float* x, int64_t x_stride, float lo, float hi, float* out, int64_t out_stride, Rows2D shape,
                  cudaStream_t stream) {
  UnaryParams p;
  p.lo = lo;
  p.hi = hi;
  launch_unary<Unary::clamp>(x, x_stride, out, out_stride, shape, p, stream);
}

void launch_add_bias(const float* x, int64_t x_stride, const float* bias, float* out, int64_t out_stride,
                     Rows2D shape, cudaStream_t stream) {
  UnaryParams p;
  p.bias = bias;
  launch_unary<Unary::add_bias>(x, x_stride, out, out_stride, shape, p, stream);
}

void launch_snake(const float* x, int64_t x_stride, const float* alpha, const float* inv_beta, float* out,
                  int64_t out_stride, Rows2D shape, cudaStream_t stream) {
  UnaryParams p;
  p.alpha = alpha;
  p.inv_beta = inv_beta;
  launch_unary<Unary::snake>(x, x_stride, out, out_stride, shape, p, stream);
}

void launch_depthwise_conv1d(const float* x, int64_t x_stride, const float* w, int64_t w_stride, int taps,
                             const float* bias, float* out, int64_t out_stride, Rows2D shape, cudaStream_t stream) {
  const long long n = shape.rows * shape.cols;
  if (n == 0) return;
  depthwise_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, x_stride, w, w_stride, taps, bias, out, out_stride,
                                                         shape.rows, shape.cols);
}

void launch_conv(const ConvLaunch& conv, cudaStream_t stream) {
  if (conv.rows == 0 || conv.columns == 0) return;
  const dim3 grid(static_cast<unsigned>((conv.columns + kTileCols - 1) / kTileCols),
                  static_cast<unsigned>((conv.rows + kTileRows - 1) / kTileRows));
  conv_kernel<<<grid, kConvThreads, 0, stream>>>(conv);
}

}  // namespace sluice::backends::cuda
