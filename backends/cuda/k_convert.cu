// F32 activations -> F16 or BF16, for cuBLAS GEMMs whose weights are 16-bit
// (cuBLAS takes A and B of one type). Round to nearest, ties to even; values beyond
// the F16 range become infinities, as __float2half_rn defines.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "backends/check.h"
#include "backends/cuda/cuda_error.h"
#include "backends/cuda/kernels.h"

namespace sluice::backends::cuda {
namespace {

constexpr int kThreads = 256;

// The F16 and BF16 roundings, one value or a pair (a 4-byte store).
template <class Elem>
struct Narrow;
template <>
struct Narrow<__half> {
  using Pair = __half2;
  static __device__ __forceinline__ __half one(float a) { return __float2half_rn(a); }
  static __device__ __forceinline__ __half2 two(float a, float b) { return __floats2half2_rn(a, b); }
};
template <>
struct Narrow<__nv_bfloat16> {
  using Pair = __nv_bfloat162;
  static __device__ __forceinline__ __nv_bfloat16 one(float a) { return __float2bfloat16_rn(a); }
  static __device__ __forceinline__ __nv_bfloat162 two(float a, float b) { return __floats2bfloat162_rn(a, b); }
};

// One block per row. `vectorized`: cols % 4 == 0, x rows 16-byte and out 8-byte aligned.
template <class Elem>
__global__ void __launch_bounds__(kThreads)
    convert_kernel(const float* x, int64_t x_stride, int64_t cols, Elem* out, bool vectorized) {
  using N = Narrow<Elem>;
  const float* xr = x + blockIdx.x * x_stride;
  Elem* o = out + blockIdx.x * cols;
  if (vectorized) {
    for (int64_t i = threadIdx.x; i < cols / 4; i += blockDim.x) {
      const float4 f = reinterpret_cast<const float4*>(xr)[i];
      auto* p = reinterpret_cast<typename N::Pair*>(o + 4 * i);
      p[0] = N::two(f.x, f.y);
      p[1] = N::two(f.z, f.w);
    }
  } else {
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) o[i] = N::one(xr[i]);
  }
}

}  // namespace

void launch_convert_f32(const float* x, int64_t x_stride, Rows2D shape, DType out_dtype, void* out,
                        cudaStream_t stream) {
  SLUICE_CHECK(out_dtype == DType::F16 || out_dtype == DType::BF16, "convert_f32: F16 or BF16 only");
  SLUICE_CHECK(shape.rows >= 0 && shape.cols >= 0 && shape.rows <= INT_MAX, "convert_f32: bad shape");
  if (shape.rows == 0 || shape.cols == 0) return;
  const bool vectorized = shape.cols % 4 == 0 && x_stride % 4 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                          reinterpret_cast<uintptr_t>(out) % 8 == 0;
  const auto grid = static_cast<unsigned>(shape.rows);
  if (out_dtype == DType::F16) {
    convert_kernel<<<grid, kThreads, 0, stream>>>(x, x_stride, shape.cols, static_cast<__half*>(out), vectorized);
  } else {
    convert_kernel<<<grid, kThreads, 0, stream>>>(x, x_stride, shape.cols, static_cast<__nv_bfloat16*>(out),
                                                 vectorized);
  }
  SLUICE_CUDA_LAUNCH_CHECK();
}

}  // namespace sluice::backends::cuda
