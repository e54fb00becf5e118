// RMSNorm, residual add + RMSNorm, LayerNorm: one block per row. Sums in F32 per
// thread, then a block reduction (the CPU sums in double; rows are a few thousand
// elements, so the two agree to ~1e-6 relative).
#include "backends/cuda/kernels.h"
#include "backends/cuda/reduce.cuh"

namespace sluice::backends::cuda {
namespace {

__global__ void rms_norm_kernel(const float* x, long long x_stride, const float* w, float eps, float* out,
                                long long out_stride, int cols) {
  __shared__ float shared[32];
  const float* xr = x + blockIdx.x * x_stride;
  float* yr = out + blockIdx.x * out_stride;
  float sum_sq = 0.0f;
  for (int k = threadIdx.x; k < cols; k += blockDim.x) sum_sq += xr[k] * xr[k];
  sum_sq = block_sum(sum_sq, shared);
  const float inv = 1.0f / sqrtf(sum_sq / cols + eps);
  for (int k = threadIdx.x; k < cols; k += blockDim.x) yr[k] = xr[k] * inv * w[k];
}

// hidden += branch, then normed = rms_norm(hidden): the residual stream is read and
// written once instead of three times.
__global__ void add_rms_norm_kernel(float* hidden, long long h_stride, const float* branch, long long b_stride,
                                    const float* w, float eps, float* normed, long long n_stride, int cols) {
  __shared__ float shared[32];
  float* hr = hidden + blockIdx.x * h_stride;
  const float* br = branch + blockIdx.x * b_stride;
  float* nr = normed + blockIdx.x * n_stride;
  float sum_sq = 0.0f;
  for (int k = threadIdx.x; k < cols; k += blockDim.x) {
    const float h = hr[k] + br[k];
    hr[k] = h;  // the same thread reads it back below
    sum_sq += h * h;
  }
  sum_sq = block_sum(sum_sq, shared);
  const float inv = 1.0f / sqrtf(sum_sq / cols + eps);
  for (int k = threadIdx.x; k < cols; k += blockDim.x) nr[k] = hr[k] * inv * w[k];
}

__global__ void layer_norm_kernel(const float* x, long long x_stride, const float* w, const float* b, float eps,
                                  float* out, long long out_stride, int cols) {
  __shared__ float shared[32];
  const float* xr = x + blockIdx.x * x_stride;
  float* yr = out + blockIdx.x * out_stride;
  float sum = 0.0f;
  for (int k = threadIdx.x; k < cols; k += blockDim.x) sum += xr[k];
  const float mean = block_sum(sum, shared) / cols;
  float sum_sq = 0.0f;
  for (int k = threadIdx.x; k < cols; k += blockDim.x) {
    const float d = xr[k] - mean;
    sum_sq += d * d;
  }
  const float inv = 1.0f / sqrtf(block_sum(sum_sq, shared) / cols + eps);
  for (int k = threadIdx.x; k < cols; k += blockDim.x) {
    const float y = (xr[k] - mean) * inv * w[k];
    yr[k] = b ? y + b[k] : y;
  }
}

}  // namespace

void launch_rms_norm(const float* x, int64_t x_stride, const float* weight, float eps, float* out,
                     int64_t out_stride, Rows2D shape, cudaStream_t stream) {
  if (shape.rows == 0) return;
  rms_norm_kernel<<<static_cast<unsigned>(shape.rows), row_threads(shape.cols), 0, stream>>>(
      x, x_stride, weight, eps, out, out_stride, static_cast<int>(shape.cols));
}

void launch_add_rms_norm(float* hidden, int64_t hidden_stride, const float* branch, int64_t branch_stride,
                         const float* weight, float eps, float* normed, int64_t normed_stride, Rows2D shape,
                         cudaStream_t stream) {
  if (shape.rows == 0) return;
  add_rms_norm_kernel<<<static_cast<unsigned>(shape.rows), row_threads(shape.cols), 0, stream>>>(
      hidden, hidden_stride, branch, branch_stride, weight, eps, normed, normed_stride, static_cast<int>(shape.cols));
}

void launch_layer_norm(const float* x, int64_t x_stride, const float* weight, const float* bias, float eps,
                       float* out, int64_t out_stride, Rows2D shape, cudaStream_t stream) {
  if (shape.rows == 0) return;
  layer_norm_kernel<<<static_cast<unsigned>(shape.rows), row_threads(shape.cols), 0, stream>>>(
      x, x_stride, weight, bias, eps, out, out_stride, static_cast<int>(shape.cols));
}

}  // namespace sluice::backends::cuda
