// Paged causal attention over a flattened batch (prefill chunks and decode rows
// together), grouped-query heads, sliding window and soft-cap.
//
// Work unit: one (query row, KV head) pair computes the `group` query heads that
// share the KV head, so each key and value row is read once for all of them. Its
// keys go in tiles of 32 positions, and the tiles are dealt round-robin to
// kSplits = 32 splits: split z owns tiles z, z + 32, z + 64, ... One warp computes
// one split: in a tile, lane i owns key i and computes that key's scores (its whole
// K row in 16-byte loads, the queries in shared memory, no shuffles); the softmax is
// online per tile; then the value rows are summed with 16-byte loads, the warp
// split into key slots of head_dim / 8 lanes (two keys per instruction at
// head_dim 128), each lane owning 8 elements. A split ends as (max, sum, values).
// The splits are then merged in split order, one fixed formula (merge_head, merge_element).
//
// Two launch shapes give the same bits, because each split is computed by the same
// code and merged in the same order:
// - few work units (decode): one warp per split across the grid (rows x KV heads x
//   8 blocks of 4 warps), partial results in a scratch area, then a combine kernel.
//   One sequence at 512 cached tokens keeps 16 warps busy per KV head instead of 4
//   (an H200 showed one decoding sequence taking 0.1 ms per layer on 8 blocks).
// - many work units (prefill, large batches): one block of 4 warps per unit, taking
//   the splits four at a time and merging them through shared memory.
// Which shape a launch takes depends on its row count, never a row's result, so
// results are batch invariant. Sequence metadata comes from device memory
// (begin_step), so the kernels replay correctly inside a recorded step. Padding rows
// (row_sequence -1) write zeros.
#include <cuda_fp16.h>

#include "backends/cuda/kernels.h"
#include "backends/cuda/reduce.cuh"

namespace sluice::backends::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kTile = 32;    // key positions per tile: one per lane
constexpr int kSplits = 32;  // splits per work unit, whatever the launch shape
constexpr int kGroup = kAttentionMaxGroup;

// Eight consecutive cache elements from element `offset` (a multiple of 8) as floats.
template <bool kF16>
__device__ __forceinline__ void load8(const void* cache, long long offset, float* out) {
  if constexpr (kF16) {
    const uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const __half*>(cache) + offset);
    const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(h[i]);
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  } else {
    const float4* f = reinterpret_cast<const float4*>(static_cast<const float*>(cache) + offset);
    const float4 a = f[0], b = f[1];
    out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
    out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
  }
}

// What every kernel knows about its work unit.
struct Unit {
  int seq;        // -1: a padding row
  int p;          // the query's position
  int lo;         // first visible key position
  int num_tiles;  // tiles covering lo..p
  const int* table;
};

__device__ __forceinline__ Unit unit_of(long long row, const AttentionMeta& meta, const AttentionArgs& args) {
  Unit u{};
  u.seq = meta.row_sequence[row];
  if (u.seq < 0) return u;
  const int query_begin = meta.sequences[3 * u.seq];
  const int num_cached = meta.sequences[3 * u.seq + 2];
  u.table = meta.block_tables + static_cast<long long>(u.seq) * meta.table_stride[0];
  u.p = num_cached + static_cast<int>(row - query_begin);
  u.lo = args.sliding_window > 0 ? max(0, u.p - args.sliding_window + 1) : 0;
  u.num_tiles = (u.p - u.lo + kTile) / kTile;
  return u;
}

// The group's queries, pre-scaled, into shared memory (every lane reads all of them);
// elements past head_dim and heads past the group are zero.
template <int kDim, int kG>
__device__ __forceinline__ void load_queries(const float* q, long long row, int kv_head, const AttentionArgs& args,
                                             float (*shared_q)[kDim]) {
  const int group = args.heads / args.kv_heads;
  const float* q_row = q + (row * args.heads + static_cast<long long>(kv_head) * group) * args.head_dim;
  for (int i = threadIdx.x; i < kG * kDim; i += blockDim.x) {
    const int j = i / kDim;
    const int d = i % kDim;
    shared_q[j][d] = (j < group && d < args.head_dim) ? q_row[j * args.head_dim + d] * args.scale : 0.0f;
  }
}

// One split's result as the warp holds it after split_partial: m is the same in every
// lane, l and acc are full sums in every lane; lane (slot 0, part) holds the values of
// elements part * 8 .. part * 8 + 7.
template <int kG>
struct Split {
  float m[kG];
  float l[kG];
  float acc[kG][8];
};

// kLpr: lanes per value row (head_dim / 8 rounded up to a power of two); kG: query
// heads per KV head the registers are sized for (4 or 8: fewer registers, more
// resident warps, for the common group of 4).
template <int kLpr, bool kF16, int kG>
__device__ __forceinline__ void split_partial(int z, const Unit& u, int kv_head, const KvCacheArgs& cache,
                                              const AttentionArgs& args, const float (*shared_q)[kLpr * 8],
                                              float (*shared_p)[kTile], Split<kG>& out) {
  constexpr int kKeysPerPass = 32 / kLpr;
  constexpr int kDim = kLpr * 8;
  const int group = args.heads / args.kv_heads;
  const int head_dim = args.head_dim;
  const int lane = threadIdx.x % 32;
  const int slot = lane / kLpr;     // which key of a pass this lane sums
  const int d0 = (lane % kLpr) * 8;  // its 8 value elements
#pragma unroll
  for (int j = 0; j < kG; ++j) {
    out.m[j] = -INFINITY;
    out.l[j] = 0.0f;
#pragma unroll
    for (int e = 0; e < 8; ++e) out.acc[j][e] = 0.0f;
  }

  for (int tile = z; tile < u.num_tiles; tile += kSplits) {
    const int base = u.lo + tile * kTile;
    const int pos = base + lane;
    const bool valid = pos <= u.p;
    long long offset = 0;  // this lane's key row (K and V share the layout)
    if (valid) {
      const int block = u.table[pos / args.block_size];
      offset = ((static_cast<long long>(block) * args.block_size + pos % args.block_size) * args.kv_heads + kv_head) *
               head_dim;
    }

    // Scores of this lane's key against the group's queries.
    float s[kG];
#pragma unroll
    for (int j = 0; j < kG; ++j) s[j] = 0.0f;
    if (valid) {
      // Four 16-byte loads issued before their use (a compile-time bound lets the
      // compiler hoist them: one load's latency per four, not per load).
      for (int d4 = 0; d4 < kDim; d4 += 32) {
        float k8[4][8];
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (d4 + 8 * u < head_dim) load8<kF16>(cache.k, offset + d4 + 8 * u, k8[u]);
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const int d = d4 + 8 * u;
          if (d >= head_dim) break;
#pragma unroll
          for (int j = 0; j < kG; ++j) {
            if (j >= group) break;
            const float4 qa = *reinterpret_cast<const float4*>(&shared_q[j][d]);
            const float4 qb = *reinterpret_cast<const float4*>(&shared_q[j][d + 4]);
            float r = s[j];
            r = fmaf(qa.x, k8[u][0], r);
            r = fmaf(qa.y, k8[u][1], r);
            r = fmaf(qa.z, k8[u][2], r);
            r = fmaf(qa.w, k8[u][3], r);
            r = fmaf(qb.x, k8[u][4], r);
            r = fmaf(qb.y, k8[u][5], r);
            r = fmaf(qb.z, k8[u][6], r);
            r = fmaf(qb.w, k8[u][7], r);
            s[j] = r;
          }
        }
      }
    }

    // Online softmax over the tile: lane 0's key is always valid, so each max is finite.
#pragma unroll
    for (int j = 0; j < kG; ++j) {
      if (j >= group) break;
      float score = s[j];
      if (args.softcap > 0.0f) score = args.softcap * tanhf(score / args.softcap);
      score = valid ? score : -INFINITY;
      const float m_new = fmaxf(out.m[j], warp_max(score));
      const float correction = expf(out.m[j] - m_new);  // 0 on the first tile (m = -inf)
      const float weight = valid ? expf(score - m_new) : 0.0f;
      out.l[j] = fmaf(out.l[j], correction, weight);
      out.m[j] = m_new;
#pragma unroll
      for (int e = 0; e < 8; ++e) out.acc[j][e] *= correction;
      shared_p[j][lane] = weight;
    }
    __syncwarp();

    // Values: kKeysPerPass keys per pass, each lane adding 8 elements of its slot's key;
    // four passes' loads are issued before their sums.
    const int keys = min(kTile, u.p - base + 1);
    for (int k0 = 0; k0 < keys; k0 += 4 * kKeysPerPass) {
      float v8[4][8];
#pragma unroll
      for (int pass = 0; pass < 4; ++pass) {
        const int k = k0 + pass * kKeysPerPass + slot;
        const long long key_offset = __shfl_sync(0xffffffffu, offset, k & 31);
        if (k < keys && d0 < head_dim) load8<kF16>(cache.v, key_offset + d0, v8[pass]);
      }
#pragma unroll
      for (int pass = 0; pass < 4; ++pass) {
        const int k = k0 + pass * kKeysPerPass + slot;
        if (k < keys && d0 < head_dim) {
#pragma unroll
          for (int j = 0; j < kG; ++j) {
            if (j >= group) break;
            const float w = shared_p[j][k];
#pragma unroll
            for (int e = 0; e < 8; ++e) out.acc[j][e] = fmaf(w, v8[pass][e], out.acc[j][e]);
          }
        }
      }
    }
    __syncwarp();  // shared_p is rewritten by the next tile
  }

  // Each slot summed its own keys: add the slots (a fixed butterfly), and the lanes' l.
#pragma unroll
  for (int j = 0; j < kG; ++j) {
    if (j >= group) break;
    out.l[j] = warp_sum(out.l[j]);
#pragma unroll
    for (int off = kLpr; off < 32; off <<= 1) {
#pragma unroll
      for (int e = 0; e < 8; ++e) out.acc[j][e] += __shfl_xor_sync(0xffffffffu, out.acc[j][e], off);
    }
  }
}

// Folding the splits, in split order, into a running result per query head: a
// head's step (merge_head) gives the factors that every element of the head then
// applies (merge_element). Both launch shapes fold with these two functions; rounded
// operations only, so the compiler cannot contract them differently in two kernels.
struct MergeFactors {
  float run;    // what the running values are multiplied by
  float split;  // what the split's values are multiplied by
};

__device__ __forceinline__ MergeFactors merge_head(float& run_m, float& run_l, float m, float l) {
  const float m_new = fmaxf(run_m, m);
  const MergeFactors f{expf(run_m - m_new), expf(m - m_new)};  // run: 0 while the result is empty
  run_l = __fadd_rn(__fmul_rn(run_l, f.run), __fmul_rn(l, f.split));
  run_m = m_new;
  return f;
}

__device__ __forceinline__ float merge_element(float run_a, float a, MergeFactors f) {
  return __fadd_rn(__fmul_rn(run_a, f.run), __fmul_rn(a, f.split));
}

// Scratch layout of the split launch: per (row, KV head, split, head of the group)
// one record of m, l and head_dim values.
__device__ __forceinline__ long long record_index(long long row, int kv_head, int z, int j, const AttentionArgs& args) {
  return ((row * args.kv_heads + kv_head) * kSplits + z) * kGroup + j;
}

// Many work units: one block of 4 warps each, the splits four at a time.
template <int kLpr, bool kF16, int kG>
__global__ void __launch_bounds__(kWarps * 32)
    attention_blocks(const float* q, KvCacheArgs cache, AttentionMeta meta, AttentionArgs args, float* out) {
  constexpr int kDim = kLpr * 8;
  constexpr int kPerThread = (kG * kDim + kWarps * 32 - 1) / (kWarps * 32);
  const long long row = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int group = args.heads / args.kv_heads;
  const int head_dim = args.head_dim;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  float* out_row = out + (row * args.heads + static_cast<long long>(kv_head) * group) * head_dim;

  const Unit u = unit_of(row, meta, args);
  if (u.seq < 0) {
    for (int i = threadIdx.x; i < group * head_dim; i += blockDim.x) out_row[i] = 0.0f;
    return;
  }
  __shared__ __align__(16) float shared_q[kG][kDim];
  __shared__ float shared_p[kWarps][kG][kTile];
  __shared__ float split_m[kWarps][kG];
  __shared__ float split_l[kWarps][kG];
  __shared__ float split_acc[kWarps][kG][kDim];
  load_queries<kDim, kG>(q, row, kv_head, args, shared_q);
  __syncthreads();

  __shared__ float run_m[kG], run_l[kG];
  __shared__ MergeFactors factors[kWarps][kG];
  if (threadIdx.x < kG) run_m[threadIdx.x] = -INFINITY, run_l[threadIdx.x] = 0.0f;
  float run_a[kPerThread];
#pragma unroll
  for (int t = 0; t < kPerThread; ++t) run_a[t] = 0.0f;

  const int used_splits = min(kSplits, u.num_tiles);
  for (int first = 0; first < used_splits; first += kWarps) {
    const int z = first + warp;
    if (z < used_splits) {
      Split<kG> s;
      split_partial<kLpr, kF16, kG>(z, u, kv_head, cache, args, shared_q, shared_p[warp], s);
      const int d0 = lane * 8;
#pragma unroll
      for (int j = 0; j < kG; ++j) {
        if (j >= group) break;
        if (lane == 0) split_m[warp][j] = s.m[j], split_l[warp][j] = s.l[j];
        if (d0 < kDim) {
#pragma unroll
          for (int e = 0; e < 8; ++e) split_acc[warp][j][d0 + e] = s.acc[j][e];
        }
      }
    }
    __syncthreads();
    const int splits_now = min(kWarps, used_splits - first);
    if (threadIdx.x < group) {
      const int j = threadIdx.x;
      for (int w = 0; w < splits_now; ++w) factors[w][j] = merge_head(run_m[j], run_l[j], split_m[w][j], split_l[w][j]);
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < kPerThread; ++t) {
      const int i = threadIdx.x + t * kWarps * 32;
      if (i >= group * head_dim) break;
      const int j = i / head_dim, d = i % head_dim;
      for (int w = 0; w < splits_now; ++w) run_a[t] = merge_element(run_a[t], split_acc[w][j][d], factors[w][j]);
    }
    __syncthreads();  // the split areas are rewritten by the next four
  }
#pragma unroll
  for (int t = 0; t < kPerThread; ++t) {
    const int i = threadIdx.x + t * kWarps * 32;
    if (i < group * head_dim) out_row[i] = __fdiv_rn(run_a[t], run_l[i / head_dim]);
  }
}

// Few work units: one warp per split, grid (rows, KV heads, kSplits / 4); results
// into the scratch records, merged by attention_combine.
template <int kLpr, bool kF16, int kG>
__global__ void __launch_bounds__(kWarps * 32)
    attention_splits(const float* q, KvCacheArgs cache, AttentionMeta meta, AttentionArgs args, float* split_m_l,
                     float* split_acc) {
  constexpr int kDim = kLpr * 8;
  const long long row = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int group = args.heads / args.kv_heads;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const Unit u = unit_of(row, meta, args);
  if (u.seq < 0 || static_cast<int>(blockIdx.z) * kWarps >= u.num_tiles) return;  // nothing for this block

  __shared__ __align__(16) float shared_q[kG][kDim];
  __shared__ float shared_p[kWarps][kG][kTile];
  load_queries<kDim, kG>(q, row, kv_head, args, shared_q);
  __syncthreads();
  const int z = blockIdx.z * kWarps + warp;
  if (z >= u.num_tiles) return;
  Split<kG> s;
  split_partial<kLpr, kF16, kG>(z, u, kv_head, cache, args, shared_q, shared_p[warp], s);
  const int d0 = lane * 8;
#pragma unroll
  for (int j = 0; j < kG; ++j) {
    if (j >= group) break;
    const long long r = record_index(row, kv_head, z, j, args);
    if (lane == 0) split_m_l[2 * r] = s.m[j], split_m_l[2 * r + 1] = s.l[j];
    if (d0 < args.head_dim) {
#pragma unroll
      for (int e = 0; e < 8; ++e) split_acc[r * args.head_dim + d0 + e] = s.acc[j][e];
    }
  }
}

__global__ void __launch_bounds__(kWarps * 32)
    attention_combine(const float* split_m_l, const float* split_acc, AttentionMeta meta, AttentionArgs args,
                      float* out) {
  const long long row = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int group = args.heads / args.kv_heads;
  const int head_dim = args.head_dim;
  float* out_row = out + (row * args.heads + static_cast<long long>(kv_head) * group) * head_dim;
  const Unit u = unit_of(row, meta, args);
  if (u.seq < 0) {
    for (int i = threadIdx.x; i < group * head_dim; i += blockDim.x) out_row[i] = 0.0f;
    return;
  }
  const int used_splits = min(kSplits, u.num_tiles);
  __shared__ MergeFactors factors[kSplits][kGroup];
  __shared__ float sums[kGroup];
  if (threadIdx.x < group) {
    const int j = threadIdx.x;
    float m[kSplits], l[kSplits];
#pragma unroll
    for (int z = 0; z < kSplits; ++z) {  // every load first, then the sequential fold
      if (z < used_splits) {
        const long long r = record_index(row, kv_head, z, j, args);
        m[z] = split_m_l[2 * r];
        l[z] = split_m_l[2 * r + 1];
      }
    }
    float run_m = -INFINITY, run_l = 0.0f;
#pragma unroll
    for (int z = 0; z < kSplits; ++z)
      if (z < used_splits) factors[z][j] = merge_head(run_m, run_l, m[z], l[z]);
    sums[j] = run_l;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < group * head_dim; i += blockDim.x) {
    const int j = i / head_dim, d = i % head_dim;
    float a[kSplits];
#pragma unroll
    for (int z = 0; z < kSplits; ++z)
      if (z < used_splits) a[z] = split_acc[record_index(row, kv_head, z, j, args) * head_dim + d];
    float run_a = 0.0f;
#pragma unroll
    for (int z = 0; z < kSplits; ++z)
      if (z < used_splits) run_a = merge_element(run_a, a[z], factors[z][j]);
    out_row[i] = __fdiv_rn(run_a, sums[j]);
  }
}

// At most this many work units take the split launch, and only with a scratch area of
// at most kMaxSplitScratchBytes: past that the block launch has enough blocks.
constexpr long long kMaxSplitUnits = 512;
constexpr size_t kMaxSplitScratchBytes = size_t{64} << 20;

template <int kLpr, bool kF16, int kG>
void launch_shape(const float* q, const KvCacheArgs& cache, const AttentionMeta& meta, const AttentionArgs& args,
                  float* out, float* scratch, cudaStream_t stream) {
  const dim3 units(static_cast<unsigned>(args.rows), static_cast<unsigned>(args.kv_heads));
  if (scratch == nullptr) {
    attention_blocks<kLpr, kF16, kG><<<units, kWarps * 32, 0, stream>>>(q, cache, meta, args, out);
    return;
  }
  const long long records = args.rows * args.kv_heads * kSplits * kGroup;
  float* split_m_l = scratch;
  float* split_acc = scratch + 2 * records;
  const dim3 splits(units.x, units.y, kSplits / kWarps);
  attention_splits<kLpr, kF16, kG><<<splits, kWarps * 32, 0, stream>>>(q, cache, meta, args, split_m_l, split_acc);
  attention_combine<<<units, kWarps * 32, 0, stream>>>(split_m_l, split_acc, meta, args, out);
}

template <int kLpr>
void launch_lanes(const float* q, const KvCacheArgs& cache, const AttentionMeta& meta, const AttentionArgs& args,
                  float* out, float* scratch, cudaStream_t stream) {
  const bool small_group = args.heads / args.kv_heads <= 4;
  if (cache.f16 && small_group) launch_shape<kLpr, true, 4>(q, cache, meta, args, out, scratch, stream);
  else if (cache.f16) launch_shape<kLpr, true, 8>(q, cache, meta, args, out, scratch, stream);
  else if (small_group) launch_shape<kLpr, false, 4>(q, cache, meta, args, out, scratch, stream);
  else launch_shape<kLpr, false, 8>(q, cache, meta, args, out, scratch, stream);
}

}  // namespace

size_t attention_split_scratch_bytes(const AttentionArgs& args) {
  const long long units = args.rows * args.kv_heads;
  if (units > kMaxSplitUnits) return 0;
  const size_t bytes = static_cast<size_t>(units) * kSplits * kGroup * (2 + args.head_dim) * sizeof(float);
  return bytes <= kMaxSplitScratchBytes ? bytes : 0;
}

void launch_attention(const float* q, const KvCacheArgs& cache, const AttentionMeta& meta,
                      const AttentionArgs& args, float* out, float* split_scratch, cudaStream_t stream) {
  if (args.rows == 0) return;
  const int lanes = (args.head_dim + 7) / 8;  // lanes per value row, rounded up to a power of two
  if (lanes <= 4) launch_lanes<4>(q, cache, meta, args, out, split_scratch, stream);
  else if (lanes <= 8) launch_lanes<8>(q, cache, meta, args, out, split_scratch, stream);
  else if (lanes <= 16) launch_lanes<16>(q, cache, meta, args, out, split_scratch, stream);
  else launch_lanes<32>(q, cache, meta, args, out, split_scratch, stream);
}

}  // namespace sluice::backends::cuda
