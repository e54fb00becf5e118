// Element-wise ops (add, mul, SwiGLU, GeGLU, scale), the row softmax and the
// transpose, F32, rows with strides. Except for the transpose, out may alias an
// input: each element is read before it is written.
#include "backends/cuda/kernels.h"
#include "backends/cuda/reduce.cuh"

namespace sluice::backends::cuda {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

__device__ __forceinline__ float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

template <BinaryOp kOp>
__global__ void binary_kernel(const float* a, long long a_stride, const float* b, long long b_stride, float* out,
                              long long out_stride, long long rows, long long cols) {
  const long long n = rows * cols;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / cols;
    const long long c = i - r * cols;
    const float x = a[r * a_stride + c];
    const float y = b[r * b_stride + c];
    float z;
    if constexpr (kOp == BinaryOp::add) {
      z = x + y;
    } else if constexpr (kOp == BinaryOp::mul) {
      z = x * y;
    } else if constexpr (kOp == BinaryOp::swiglu) {
      z = silu(x) * y;
    } else {
      z = gelu_tanh(x) * y;
    }
    out[r * out_stride + c] = z;
  }
}

__global__ void scale_kernel(const float* x, long long x_stride, float s, float* out, long long out_stride,
                             long long rows, long long cols) {
  const long long n = rows * cols;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / cols;
    const long long c = i - r * cols;
    out[r * out_stride + c] = x[r * x_stride + c] * s;
  }
}

// Max-subtracted; a row with nothing but -inf becomes zeros (as on the CPU).
__global__ void softmax_kernel(const float* x, long long x_stride, float* out, long long out_stride, int cols) {
  __shared__ float shared[32];
  const float* xr = x + blockIdx.x * x_stride;
  float* yr = out + blockIdx.x * out_stride;
  float max = -INFINITY;
  for (int k = threadIdx.x; k < cols; k += blockDim.x) max = fmaxf(max, xr[k]);
  max = block_max(max, shared);
  if (max == -INFINITY) {
    for (int k = threadIdx.x; k < cols; k += blockDim.x) yr[k] = 0.0f;
    return;
  }
  float sum = 0.0f;
  for (int k = threadIdx.x; k < cols; k += blockDim.x) {
    const float e = expf(xr[k] - max);
    yr[k] = e;
    sum += e;
  }
  const float inv = 1.0f / block_sum(sum, shared);
  for (int k = threadIdx.x; k < cols; k += blockDim.x) yr[k] *= inv;
}

// One 32 x 32 tile per block through shared memory (padded against bank
// conflicts), so reads and writes are both coalesced.
constexpr int kTile = 32;
__global__ void transpose_kernel(const float* x, long long x_stride, float* out, long long out_stride, long long rows,
                                 long long cols) {
  __shared__ float tile[kTile][kTile + 1];
  const long long r0 = static_cast<long long>(blockIdx.y) * kTile, c0 = static_cast<long long>(blockIdx.x) * kTile;
  for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
    const long long r = r0 + i, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[i][threadIdx.x] = x[r * x_stride + c];
  }
  __syncthreads();
  for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
    const long long c = c0 + i, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[c * out_stride + r] = tile[threadIdx.x][i];
  }
}

unsigned grid_for(long long n) {
  const long long blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

}  // namespace

void launch_binary(BinaryOp op, const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* out,
                   int64_t out_stride, Rows2D shape, cudaStream_t stream) {
  const long long n = shape.rows * shape.cols;
  if (n == 0) return;
  switch (op) {
    case BinaryOp::add:
      binary_kernel<BinaryOp::add><<<grid_for(n), kThreads, 0, stream>>>(a, a_stride, b, b_stride, out, out_stride,
                                                                         shape.rows, shape.cols);
      break;
    case BinaryOp::mul:
      binary_kernel<BinaryOp::mul><<<grid_for(n), kThreads, 0, stream>>>(a, a_stride, b, b_stride, out, out_stride,
                                                                         shape.rows, shape.cols);
      break;
    case BinaryOp::swiglu:
      binary_kernel<BinaryOp::swiglu><<<grid_for(n), kThreads, 0, stream>>>(a, a_stride, b, b_stride, out,
                                                                            out_stride, shape.rows, shape.cols);
      break;
    case BinaryOp::geglu:
      binary_kernel<BinaryOp::geglu><<<grid_for(n), kThreads, 0, stream>>>(a, a_stride, b, b_stride, out,
                                                                           out_stride, shape.rows, shape.cols);
      break;
  }
}

void launch_scale(const float* x, int64_t x_stride, float s, float* out, int64_t out_stride, Rows2D shape,
                  cudaStream_t stream) {
  const long long n = shape.rows * shape.cols;
  if (n == 0) return;
  scale_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, x_stride, s, out, out_stride, shape.rows, shape.cols);
}

void launch_softmax(const float* x, int64_t x_stride, float* out, int64_t out_stride, Rows2D shape,
                    cudaStream_t stream) {
  if (shape.rows == 0) return;
  softmax_kernel<<<static_cast<unsigned>(shape.rows), row_threads(shape.cols), 0, stream>>>(
      x, x_stride, out, out_stride, static_cast<int>(shape.cols));
}

void launch_transpose(const float* x, int64_t x_stride, float* out, int64_t out_stride, Rows2D shape,
                      cudaStream_t stream) {
  if (shape.rows == 0 || shape.cols == 0) return;
  const dim3 grid(static_cast<unsigned>((shape.cols + kTile - 1) / kTile),
                  static_cast<unsigned>((shape.rows + kTile - 1) / kTile));
  transpose_kernel<<<grid, dim3(kTile, 8), 0, stream>>>(x, x_stride, out, out_stride, shape.rows, shape.cols);
}

}  // namespace sluice::backends::cuda
