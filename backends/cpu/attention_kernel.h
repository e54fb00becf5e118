#pragma once
// The inner loop of CPU attention: one item is up to kAttentionRows consecutive
// query rows of one sequence, for one or more query heads of one KV head (a GQA
// group shares each key and value block it loads and converts). Written once (attention_kernel_impl.h)
// and compiled per ISA (attention_kernel_{scalar,avx2,avx512}.cpp), with
// -ffp-contract=off and no library math on the hot path, so every build and path
// gives the same bits; ops_attention.cpp validates, makes the items and picks the
// path.
//
// Numerics, per query: keys in position order, in blocks aligned to absolute
// positions (multiples of kAttentionKeys), online softmax: a block's scores
// (F32 dot in dot.h's order, times scale, optional softcap), the running max
// raised to the block's (rescaling the sum and the accumulator by exp(old - new)),
// then each key's exp(s - max) added to the sum and, times V, to the accumulator,
// in order; out = acc / sum. Nothing depends on the other rows or heads of the
// item, on how queries are grouped into items or on the thread split.
#include <cstddef>
#include <cstdint>

#include "backends/cpu/quant/cpu_features.h"

namespace sluice::backends::cpu {

inline constexpr int kAttentionRows = 16;  // queries (rows x heads) per item
inline constexpr int kAttentionKeys = 16;  // keys per online-softmax block

struct AttentionArgs {
  const float* q;          // [T, heads, hd]: row t * heads + h of [T * heads, hd]
  int64_t q_row_stride;    // floats between rows of [T * heads, hd]
  float* out;
  int64_t out_row_stride;
  const std::byte* k;      // cache [blocks, block_size, kv_heads, hd], F32 or F16
  const std::byte* v;
  int64_t kv_row_bytes;    // bytes between rows of the cache seen as [blocks * block_size * kv_heads, hd]
  bool kv_f16;
  int64_t num_heads, kv_heads, head_dim, block_size;
  float scale, softcap;
  int32_t sliding_window;
};

struct AttentionItem {
  int64_t first_row;       // row in q / out of the first query
  int32_t num_rows;        // query rows; num_rows * num_heads <= kAttentionRows
  int32_t num_heads;       // query heads first_head .. first_head + num_heads - 1, all of one KV head
  int64_t first_position;  // position of the first query
  int64_t first_head;
  const int32_t* block_table;
};

// scratch: at least attention_scratch_floats(head_dim) floats.
using AttentionKernel = void (*)(const AttentionArgs& args, const AttentionItem& item, float* scratch);

inline size_t attention_scratch_floats(int64_t head_dim) {
  return static_cast<size_t>(2 * kAttentionKeys * head_dim + kAttentionRows * (head_dim + 2) + kAttentionKeys);
}

AttentionKernel attention_kernel(KernelPath path);
AttentionKernel scalar_attention_kernel();
AttentionKernel avx2_attention_kernel();
AttentionKernel avx512_attention_kernel();

}  // namespace sluice::backends::cpu
