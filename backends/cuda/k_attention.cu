// Paged causal attention over a flattened batch (prefill chunks and decode rows
// together), grouped-query heads, sliding window and soft-cap.
//
// One block per (query row, KV head) with 4 warps. The block computes the `group`
// query heads that share the KV head, so each key and value row is read once for
// all of them. Warp w takes positions lo + w, lo + w + 4, ...; per key, each lane
// holds head_dim / 32 elements (element e * 32 + lane, coalesced), the dot product
// is a warp sum, and the softmax is online (running max and sum per head). The four
// warps' partial results are merged through shared memory at the end.
//
// Sequence metadata comes from device memory (begin_step), so the kernel replays
// correctly inside a recorded step. Padding rows (row_sequence -1) write zeros.
#include <cuda_fp16.h>

#include "backends/cuda/kernels.h"
#include "backends/cuda/reduce.cuh"

namespace sluice::backends::cuda {
namespace {

constexpr int kWarps = 4;

template <int kPerLane>
__device__ __forceinline__ void load_row(const void* cache, bool f16, long long offset, int head_dim, float* out) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int e = 0; e < kPerLane; ++e) {
    const int d = e * 32 + lane;
    float value = 0.0f;
    if (d < head_dim)
      value = f16 ? __half2float(static_cast<const __half*>(cache)[offset + d])
                  : static_cast<const float*>(cache)[offset + d];
    out[e] = value;
  }
}

// kPerLane = ceil(head_dim / 32) rounded up to 1, 2, 4 or 8.
template <int kPerLane>
__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(const float* q, KvCacheArgs cache, AttentionMeta meta, AttentionArgs args, float* out) {
  constexpr int G = kAttentionMaxGroup;
  const long long row = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int group = args.heads / args.kv_heads;
  const int head_dim = args.head_dim;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;

  const int seq = meta.row_sequence[row];
  float* out_row = out + (row * args.heads + static_cast<long long>(kv_head) * group) * head_dim;
  if (seq < 0) {
    for (int i = threadIdx.x; i < group * head_dim; i += blockDim.x) out_row[i] = 0.0f;
    return;
  }
  const int query_begin = meta.sequences[3 * seq];
  const int num_cached = meta.sequences[3 * seq + 2];
  const int* table = meta.block_tables + static_cast<long long>(seq) * meta.table_stride[0];
  const int p = num_cached + static_cast<int>(row - query_begin);  // this query's position
  const int lo = args.sliding_window > 0 ? max(0, p - args.sliding_window + 1) : 0;

  float qr[G][kPerLane];
  float acc[G][kPerLane];
  float m[G], l[G];
  const float* q_row = q + (row * args.heads + static_cast<long long>(kv_head) * group) * head_dim;
#pragma unroll
  for (int j = 0; j < G; ++j) {
    m[j] = -INFINITY;
    l[j] = 0.0f;
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) {
      const int d = e * 32 + lane;
      qr[j][e] = (j < group && d < head_dim) ? q_row[j * head_dim + d] : 0.0f;
      acc[j][e] = 0.0f;
    }
  }

  float kv[kPerLane];
  for (int pos = lo + warp; pos <= p; pos += kWarps) {
    const int block = table[pos / args.block_size];
    const long long offset =
        ((static_cast<long long>(block) * args.block_size + pos % args.block_size) * args.kv_heads + kv_head) *
        head_dim;
    load_row<kPerLane>(cache.k, cache.f16, offset, head_dim, kv);
    float weight[G];
#pragma unroll
    for (int j = 0; j < G; ++j) {
      if (j >= group) break;
      float partial = 0.0f;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) partial += qr[j][e] * kv[e];
      float s = warp_sum(partial) * args.scale;
      if (args.softcap > 0.0f) s = args.softcap * tanhf(s / args.softcap);
      const float m_new = fmaxf(m[j], s);
      const float correction = expf(m[j] - m_new);  // 0 on the first key (m = -inf)
      weight[j] = expf(s - m_new);
      l[j] = l[j] * correction + weight[j];
      m[j] = m_new;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) acc[j][e] *= correction;
    }
    load_row<kPerLane>(cache.v, cache.f16, offset, head_dim, kv);
#pragma unroll
    for (int j = 0; j < G; ++j) {
      if (j >= group) break;
#pragma unroll
      for (int e = 0; e < kPerLane; ++e) acc[j][e] += weight[j] * kv[e];
    }
  }

  // Merge the warps: out = sum_w acc_w * exp(m_w - M) / sum_w l_w * exp(m_w - M).
  __shared__ float shared_m[kWarps][G];
  __shared__ float shared_l[kWarps][G];
  __shared__ float shared_acc[kWarps][G][kPerLane * 32];
#pragma unroll
  for (int j = 0; j < G; ++j) {
    if (j >= group) break;
    if (lane == 0) {
      shared_m[warp][j] = m[j];
      shared_l[warp][j] = l[j];
    }
#pragma unroll
    for (int e = 0; e < kPerLane; ++e) shared_acc[warp][j][e * 32 + lane] = acc[j][e];
  }
  __syncthreads();
  for (int i = threadIdx.x; i < group * head_dim; i += blockDim.x) {
    const int j = i / head_dim;
    const int d = i % head_dim;
    float max = -INFINITY;
    for (int w = 0; w < kWarps; ++w) max = fmaxf(max, shared_m[w][j]);
    float sum = 0.0f, value = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      if (shared_m[w][j] == -INFINITY) continue;  // a warp that saw no key
      const float f = expf(shared_m[w][j] - max);
      sum += shared_l[w][j] * f;
      value += shared_acc[w][j][d] * f;
    }
    out_row[i] = value / sum;
  }
}

}  // namespace

void launch_attention(const float* q, const KvCacheArgs& cache, const AttentionMeta& meta,
                      const AttentionArgs& args, float* out, cudaStream_t stream) {
  if (args.rows == 0) return;
  const dim3 grid(static_cast<unsigned>(args.rows), static_cast<unsigned>(args.kv_heads));
  const int per_lane = (args.head_dim + 31) / 32;
  if (per_lane <= 1) {
    attention_kernel<1><<<grid, kWarps * 32, 0, stream>>>(q, cache, meta, args, out);
  } else if (per_lane <= 2) {
    attention_kernel<2><<<grid, kWarps * 32, 0, stream>>>(q, cache, meta, args, out);
  } else if (per_lane <= 4) {
    attention_kernel<4><<<grid, kWarps * 32, 0, stream>>>(q, cache, meta, args, out);
  } else {
    attention_kernel<8><<<grid, kWarps * 32, 0, stream>>>(q, cache, meta, args, out);
  }
}

}  // namespace sluice::backends::cuda
