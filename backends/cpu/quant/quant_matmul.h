#pragma once
// y = x · wᵀ for repacked quantized weights: the activations are quantized once per
// op to int8 blocks (act_quantize.h), then every (group of 16 weight rows) x (chunk
// of tokens) is one work item on the pool, and the path's kernel reuses each
// decoded weight block across all tokens of its tile. Several weights that read
// the same x (Q/K/V, gate/up) run as one op: one quantization, one barrier.
//
// Results do not depend on T or on the thread split: an output element is the same
// integer sums and the same float epilogue (quant_kernels.h) wherever it is
// computed. Owned by one CpuBackend; called from its user's thread only.
#include <span>
#include <vector>

#include "backends/cpu/quant/packed_matrix.h"
#include "backends/cpu/quant/quant_kernels.h"
#include "backends/tensor.h"

namespace sluice::backends::cpu {

class ThreadPool;

class QuantMatmul {
 public:
  explicit QuantMatmul(KernelPath path) : kernels_(quant_kernels(path)) {}

  // ys[i] = x · ws[i]ᵀ.  x [T, in] F32; ws[i] [out_i, in]; ys[i] [T, out_i] F32, rows may be strided.
  void run(ThreadPool& pool, const Tensor& x, std::span<const PackedMatrix* const> ws, std::span<const Tensor> ys);

 private:
  struct Item {
    int32_t matrix;
    int32_t group_begin, group_end;
    int64_t token_begin, token_end;
  };
  const QuantKernels& kernels_;
  std::vector<ActBlock> activations_;  // [T, in / 32]; grows to the largest step, never shrinks
  std::vector<Item> items_;
};

}  // namespace sluice::backends::cpu
