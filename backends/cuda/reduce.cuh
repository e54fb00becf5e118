#pragma once
// Warp and block reductions for the row kernels (one block per row).
#include <cuda_runtime.h>

namespace sluice::backends::cuda {

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum (or max) over the whole block; every thread gets the result. blockDim.x must
// be a multiple of 32, at most 1024. `shared` holds 32 floats.
template <bool kMax>
__device__ __forceinline__ float block_reduce(float v, float* shared) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // `shared` may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int num_warps = blockDim.x / 32;
  float r = lane < num_warps ? shared[lane] : (kMax ? -INFINITY : 0.0f);
  return kMax ? warp_max(r) : warp_sum(r);
}

__device__ __forceinline__ float block_sum(float v, float* shared) { return block_reduce<false>(v, shared); }
__device__ __forceinline__ float block_max(float v, float* shared) { return block_reduce<true>(v, shared); }

// Threads for a row kernel over `cols` elements: enough to give each a few.
inline int row_threads(long long cols) {
  int threads = 32;
  while (threads < 1024 && threads * 4 < cols) threads *= 2;
  return threads;
}

}  // namespace sluice::backends::cuda
