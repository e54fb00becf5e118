// Causal attention over the paged KV cache: checks, work items, and the kernel of
// the CPU's path (attention_kernel.h has the numerics).
//
// One work item is (sequence, head, up to 16 query rows). Query i of a sequence
// sits at position p = num_cached + i and sees positions [lo, p],
// lo = max(0, p - window + 1) with a sliding window, else 0.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/attention_kernel.h"
#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_common.h"

namespace sluice::backends::cpu {

void attention(ThreadPool& pool, KernelPath path, const Tensor& q, const KvLayer& cache,
               std::span<const SequenceSlice> sequences, const AttentionParams& params, const Tensor& out) {
  const Tensor& ck = cache.k;
  const Tensor& cv = cache.v;
  SLUICE_CHECK(q.dtype == DType::F32 && q.ndim == 3 && out.dtype == DType::F32 && same_shape(q, out),
               "attention: q and out must be [T, heads, head_dim] F32");
  SLUICE_CHECK(ck.ndim == 4 && same_shape(ck, cv) && ck.dtype == cv.dtype &&
                   (ck.dtype == DType::F32 || ck.dtype == DType::F16),
               "attention: cache must be [num_blocks, block_size, kv_heads, head_dim] F32 or F16");
  const int64_t num_heads = q.dim(1);
  const int64_t head_dim = q.dim(2);
  const int64_t num_blocks = ck.dim(0);
  const int64_t block_size = ck.dim(1);
  const int64_t kv_heads = ck.dim(2);
  SLUICE_CHECK(ck.dim(3) == head_dim, "attention: cache head_dim differs from q's");
  SLUICE_CHECK(kv_heads > 0 && num_heads % kv_heads == 0, "attention: heads must be a multiple of kv_heads");
  const int64_t group = num_heads / kv_heads;

  for (size_t s = 0; s < sequences.size(); ++s) {
    const SequenceSlice& seq = sequences[s];
    const int64_t num_tokens = static_cast<int64_t>(seq.num_cached) + seq.num_queries;
    SLUICE_CHECK(seq.num_cached >= 0 && seq.num_queries >= 0 && seq.query_begin >= 0 &&
                     seq.query_begin + seq.num_queries <= q.dim(0),
                 "attention: sequence rows outside q");
    SLUICE_CHECK(static_cast<int64_t>(seq.block_table.size()) * block_size >= num_tokens,
                 "attention: block table does not cover the sequence");
    for (int32_t b : seq.block_table) SLUICE_CHECK(b >= 0 && b < num_blocks, "attention: block id out of range");
  }

  // Items: (sequence, head, up to kAttentionRows consecutive query rows).
  // The engine thread's list (a thread_local reused across steps: no allocation
  // once it has grown); the lambda below must capture it by reference, not name
  // the thread_local, which would be each worker's own.
  thread_local std::vector<AttentionItem> item_storage;
  std::vector<AttentionItem>& items = item_storage;
  items.clear();
  for (size_t si = 0; si < sequences.size(); ++si) {
    const SequenceSlice& seq = sequences[si];
    for (int64_t h = 0; h < num_heads; ++h)
      for (int32_t i = 0; i < seq.num_queries; i += kAttentionRows)
        items.push_back({seq.query_begin + i, std::min<int32_t>(kAttentionRows, seq.num_queries - i),
                         static_cast<int64_t>(seq.num_cached) + i, h, seq.block_table.data()});
  }
  AttentionArgs args;
  args.q = reinterpret_cast<const float*>(host_ptr(q));
  args.q_row_stride = static_cast<int64_t>(q.row_stride / sizeof(float));
  args.out = reinterpret_cast<float*>(host_ptr(out));
  args.out_row_stride = static_cast<int64_t>(out.row_stride / sizeof(float));
  args.k = host_ptr(ck);
  args.v = host_ptr(cv);
  args.kv_row_bytes = static_cast<int64_t>(ck.row_stride);
  args.kv_f16 = ck.dtype == DType::F16;
  args.num_heads = num_heads;
  args.kv_heads = kv_heads;
  args.head_dim = head_dim;
  args.block_size = block_size;
  args.scale = params.scale;
  args.softcap = params.softcap;
  args.sliding_window = params.sliding_window;
  const AttentionKernel kernel = attention_kernel(path);
  pool.parallel_for(static_cast<int64_t>(items.size()), [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scratch;
    if (scratch.size() < attention_scratch_floats(head_dim)) scratch.resize(attention_scratch_floats(head_dim));
    for (int64_t i = begin; i < end; ++i) kernel(args, items[static_cast<size_t>(i)], scratch.data());
  });
}

AttentionKernel attention_kernel(KernelPath path) {
#if defined(SLUICE_X86_KERNELS)
  if (path == KernelPath::avx512_vnni) return avx512_attention_kernel();
  if (path == KernelPath::avx2 || path == KernelPath::avx2_vnni) return avx2_attention_kernel();
#endif
  (void)path;
  return scalar_attention_kernel();
}

}  // namespace sluice::backends::cpu
