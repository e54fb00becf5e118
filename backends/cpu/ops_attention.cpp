// Causal attention over the paged KV cache: checks, work items, and the kernel of
// the CPU's path (attention_kernel.h has the numerics).
//
// One work item is (sequence, query heads of one KV head, up to 16 query rows).
// Query i of a sequence sits at position p = num_cached + i and sees positions
// [lo, p], lo = max(0, p - window + 1) with a sliding window, else 0.
#include <algorithm>
#include <atomic>
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

  // Items: (sequence, query heads of one KV head, consecutive query rows), at most
  // kAttentionRows queries (rows x heads) each so that an item's state stays in L1.
  // A sequence with few query rows (decode) takes several heads of a GQA group per
  // item, so each K/V block it converts serves them all; prefill chunks take one
  // head and 16 rows. When grouping leaves too few items to keep every thread busy
  // (decode of one or two sequences), groups are split.
  const int threads = pool.num_threads();
  int64_t row_chunks = 0;
  for (const SequenceSlice& seq : sequences) row_chunks += (seq.num_queries + kAttentionRows - 1) / kAttentionRows;
  int64_t max_heads_per_item = std::min<int64_t>(group, kAttentionRows);
  while (max_heads_per_item > 1 && row_chunks * num_heads / max_heads_per_item < 4 * threads) --max_heads_per_item;
  auto heads_per_item = [&](const SequenceSlice& seq) {
    int64_t heads = std::min<int64_t>(max_heads_per_item, kAttentionRows / std::min(seq.num_queries, kAttentionRows));
    while (group % heads != 0) --heads;
    return heads;
  };
  // The engine thread's list (a thread_local reused across steps: no allocation
  // once it has grown); the lambda below must capture it by reference, not name
  // the thread_local, which would be each worker's own.
  thread_local std::vector<AttentionItem> item_storage;
  std::vector<AttentionItem>& items = item_storage;
  items.clear();
  for (const SequenceSlice& seq : sequences) {
    if (seq.num_queries == 0) continue;
    const int64_t heads = heads_per_item(seq);
    const auto rows = static_cast<int32_t>(kAttentionRows / heads);
    for (int64_t h = 0; h < num_heads; h += heads)
      for (int32_t i = 0; i < seq.num_queries; i += rows)
        items.push_back({.first_row = seq.query_begin + i,
                         .num_rows = std::min<int32_t>(rows, seq.num_queries - i),
                         .num_heads = static_cast<int32_t>(heads),
                         .first_position = static_cast<int64_t>(seq.num_cached) + i,
                         .first_head = h,
                         .block_table = seq.block_table.data()});
  }
  // Longest first (keys seen grow with the position), handed out one at a time,
  // so a causal prefill's costly late rows do not pile up on one thread. Which
  // thread runs an item never changes its numbers.
  std::sort(items.begin(), items.end(), [](const AttentionItem& x, const AttentionItem& y) {
    return x.first_position + x.num_rows > y.first_position + y.num_rows;
  });
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
  const size_t scratch_floats = attention_scratch_floats(head_dim);
  std::atomic<size_t> next{0};
  pool.parallel_for(std::min<int64_t>(threads, static_cast<int64_t>(items.size())), [&](int64_t, int64_t) {
    thread_local std::vector<float> scratch;
    if (scratch.size() < scratch_floats) scratch.resize(scratch_floats);
    for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < items.size();
         i = next.fetch_add(1, std::memory_order_relaxed))
      kernel(args, items[i], scratch.data());
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
