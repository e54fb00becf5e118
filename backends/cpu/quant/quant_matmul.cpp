#include "backends/cpu/quant/quant_matmul.h"

#include <algorithm>

#include "backends/check.h"
#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/thread_pool.h"

namespace sluice::backends::cpu {
namespace {

constexpr int64_t kTokensPerItem = 64;      // a tile of activations that stays in L1/L2
constexpr int64_t kQuantizeRowsPerItem = 8;  // below this many rows, quantize on the calling thread

}  // namespace

const QuantKernels& quant_kernels(KernelPath path) {
  switch (path) {
#if defined(SLUICE_X86_KERNELS)
    case KernelPath::avx2: return avx2_quant_kernels();
    case KernelPath::avx2_vnni: return avx2_vnni_quant_kernels();
    case KernelPath::avx512_vnni: return avx512_vnni_quant_kernels();
#endif
    default: return scalar_quant_kernels();
  }
}

void QuantMatmul::run(ThreadPool& pool, const Tensor& x, std::span<const PackedMatrix* const> ws,
                      std::span<const Tensor> ys) {
  SLUICE_CHECK(ws.size() == ys.size() && !ws.empty(), "quant matmul: one output per weight");
  SLUICE_CHECK(x.dtype == DType::F32, "quant matmul: x must be [T, in] F32");
  const int64_t num_tokens = x.rows();
  const int64_t in = x.cols();
  for (size_t i = 0; i < ws.size(); ++i) {
    SLUICE_CHECK(ws[i]->cols() == in, "quant matmul: x and w disagree on `in`");
    SLUICE_CHECK(ys[i].dtype == DType::F32 && ys[i].rows() == num_tokens && ys[i].cols() == ws[i]->rows(),
                 "quant matmul: y must be [T, out] F32");
  }
  if (num_tokens == 0) return;

  const int64_t num_blocks = in / kPackBlock;
  const size_t needed = static_cast<size_t>(num_tokens * num_blocks);
  if (activations_.size() < needed) activations_.resize(needed);
  ActBlock* act = activations_.data();
  const float* xs = reinterpret_cast<const float*>(host_ptr(x));
  const int64_t x_stride = static_cast<int64_t>(x.row_stride / sizeof(float));
  if (num_tokens < kQuantizeRowsPerItem) {
    kernels_.quantize_rows(xs, x_stride, num_tokens, num_blocks, act);
  } else {
    pool.parallel_for(num_tokens, [&](int64_t begin, int64_t end) {
      kernels_.quantize_rows(xs + begin * x_stride, x_stride, end - begin, num_blocks, act + begin * num_blocks);
    });
  }

  // Items: each matrix's groups in chunks, times chunks of tokens. Group chunks are
  // sized so every thread gets several items (an even split when some run long).
  int64_t total_groups = 0;
  for (const PackedMatrix* w : ws) total_groups += w->num_groups();
  const int64_t num_token_chunks = (num_tokens + kTokensPerItem - 1) / kTokensPerItem;
  const int64_t wanted_items = 16 * static_cast<int64_t>(pool.num_threads());
  const int64_t groups_per_item =
      std::clamp<int64_t>(total_groups * num_token_chunks / wanted_items, 1, 8);
  items_.clear();
  for (size_t m = 0; m < ws.size(); ++m) {
    const int64_t groups = ws[m]->num_groups();
    for (int64_t g = 0; g < groups; g += groups_per_item)
      for (int64_t t = 0; t < num_tokens; t += kTokensPerItem)
        items_.push_back({static_cast<int32_t>(m), static_cast<int32_t>(g),
                          static_cast<int32_t>(std::min(groups, g + groups_per_item)), t,
                          std::min(num_tokens, t + kTokensPerItem)});
  }

  struct Output {
    float* base;
    int64_t stride;  // floats between rows
  };
  Output outs[8];
  SLUICE_CHECK(ys.size() <= 8, "quant matmul: at most 8 weights per op");
  for (size_t i = 0; i < ys.size(); ++i)
    outs[i] = {reinterpret_cast<float*>(host_ptr(ys[i])), static_cast<int64_t>(ys[i].row_stride / sizeof(float))};

  pool.parallel_for(static_cast<int64_t>(items_.size()), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const Item& item = items_[static_cast<size_t>(i)];
      const PackedMatrix& w = *ws[static_cast<size_t>(item.matrix)];
      const Output& out = outs[item.matrix];
      for (int64_t g = item.group_begin; g < item.group_end; ++g) {
        const int valid_rows = static_cast<int>(std::min<int64_t>(kPackRows, w.rows() - g * kPackRows));
        kernels_.group_gemm(w.format(), w.group(g), num_blocks, act + item.token_begin * num_blocks,
                            item.token_end - item.token_begin,
                            out.base + item.token_begin * out.stride + g * kPackRows, out.stride, valid_rows);
      }
    }
  });
}

}  // namespace sluice::backends::cpu
