// Rotary embedding and the KV-cache write, fused: one block per token rotates its
// q and k heads in place and stores k and v at the token's cache slot, so k is
// read once after rotation instead of being written and read again by a second
// kernel. The same kernel serves rope() (no cache) and write_kv() (no rotation).
//
// The angle arithmetic matches the CPU backend (ops_rope.cpp) step for step:
// inv_freq in double rounded to F32, the angle one F32 product, cos/sin in double
// rounded to F32, so both backends rotate by the same F32 values.
#include <cuda_fp16.h>

#include <algorithm>

#include "backends/cuda/kernels.h"

namespace sluice::backends::cuda {
namespace {

__device__ double llama3_scaled(double inv_freq, const RopeArgs& p) {
  const double factor = p.llama3_factor;
  const double low = p.llama3_low_freq_factor;
  const double high = p.llama3_high_freq_factor;
  const double old_context = p.llama3_original_context;
  const double wavelen = 2.0 * 3.141592653589793 / inv_freq;
  if (wavelen < old_context / high) return inv_freq;
  if (wavelen > old_context / low) return inv_freq / factor;
  const double smooth = (old_context / wavelen - low) / (high - low);
  return (1.0 - smooth) * inv_freq / factor + smooth * inv_freq;
}

__device__ void rotate(float* v, int i, int half, bool neox, float c, float s) {
  const int ia = neox ? i : 2 * i;
  const int ib = neox ? i + half : 2 * i + 1;
  const float a = v[ia], b = v[ib];
  v[ia] = a * c - b * s;
  v[ib] = a * s + b * c;
}

__global__ void rope_kv_kernel(float* q, int heads, float* k, const float* v, int kv_heads, int head_dim,
                               const int32_t* positions, RopeArgs rope, bool do_rope, KvCacheArgs cache,
                               const int32_t* slots) {
  const long long t = blockIdx.x;
  if (do_rope) {
    // Each angle's cos and sin once, then every (head, pair) rotation in parallel.
    __shared__ float shared_cos[kAttentionMaxHeadDim / 2];
    __shared__ float shared_sin[kAttentionMaxHeadDim / 2];
    const int n = rope.num_rotated;
    const int half = n / 2;
    const float pos = static_cast<float>(positions[t]);
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
      double f = pow(static_cast<double>(rope.theta), -2.0 * i / n);
      if (rope.llama3_factor > 0.0f) f = llama3_scaled(f, rope);
      const float inv_freq = static_cast<float>(f * static_cast<double>(rope.freq_scale));
      const float angle = pos * inv_freq;
      shared_cos[i] = static_cast<float>(cos(static_cast<double>(angle)));
      shared_sin[i] = static_cast<float>(sin(static_cast<double>(angle)));
    }
    __syncthreads();
    const int q_heads = q ? heads : 0;
    const int k_heads = k ? kv_heads : 0;
    for (int job = threadIdx.x; job < (q_heads + k_heads) * half; job += blockDim.x) {
      const int h = job / half;
      const int i = job % half;
      float* row = h < q_heads ? q + (t * heads + h) * head_dim : k + (t * kv_heads + h - q_heads) * head_dim;
      rotate(row, i, half, rope.neox, shared_cos[i], shared_sin[i]);
    }
  }
  if (!slots) return;
  const int slot = slots[t];
  if (slot < 0) return;  // a padding row (uniform per block, so the barrier below is safe)
  __syncthreads();       // k's rotated values come from other threads
  const int width = kv_heads * head_dim;
  const float* kr = k + t * width;
  const float* vr = v + t * width;
  const long long base = static_cast<long long>(slot) * width;
  for (int e = threadIdx.x; e < width; e += blockDim.x) {
    if (cache.f16) {
      static_cast<__half*>(cache.k)[base + e] = __float2half_rn(kr[e]);
      static_cast<__half*>(cache.v)[base + e] = __float2half_rn(vr[e]);
    } else {
      static_cast<float*>(cache.k)[base + e] = kr[e];
      static_cast<float*>(cache.v)[base + e] = vr[e];
    }
  }
}

int threads_for(int n) {
  int threads = 32;
  while (threads < 256 && threads < n) threads *= 2;
  return threads;
}

}  // namespace

void launch_rope(float* x, int64_t num_tokens, int heads, int head_dim, const int32_t* positions,
                 const RopeArgs& rope, cudaStream_t stream) {
  if (num_tokens == 0) return;
  rope_kv_kernel<<<static_cast<unsigned>(num_tokens), threads_for(heads * rope.num_rotated / 2), 0, stream>>>(
      x, heads, nullptr, nullptr, 0, head_dim, positions, rope, true, KvCacheArgs{}, nullptr);
}

void launch_rope_write_kv(float* q, int heads, float* k, const float* v, int kv_heads, int head_dim,
                          int64_t num_tokens, const int32_t* positions, const RopeArgs* rope,
                          const KvCacheArgs& cache, const int32_t* slots, cudaStream_t stream) {
  if (num_tokens == 0) return;
  const int threads = threads_for(std::max(kv_heads * head_dim / 4, rope ? (heads + kv_heads) * rope->num_rotated / 2 : 0));
  rope_kv_kernel<<<static_cast<unsigned>(num_tokens), threads, 0, stream>>>(
      q, heads, k, v, kv_heads, head_dim, positions, rope ? *rope : RopeArgs{}, rope != nullptr, cache, slots);
}

}  // namespace sluice::backends::cuda
