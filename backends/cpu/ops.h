#pragma once
// The CPU kernels behind CpuBackend's ops other than matmul (matmul.h), one file
// per topic: ops_embed_kv.cpp, ops_norm.cpp, ops_rope.cpp, ops_elementwise.cpp,
// ops_attention.cpp. Shapes and aliasing rules are those of backend.h; every
// kernel checks the shapes and dtypes it relies on (SLUICE_CHECK) and computes
// each output row from its own inputs only, so results are batch invariant.
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/quant/cpu_features.h"

namespace sluice::backends::cpu {

class ThreadPool;

// table [vocab, d] (any dequantizable dtype); ids [T] I32; out [T, d] F32.
void embed(ThreadPool& pool, const Tensor& table, const Tensor& ids, const Tensor& out);

// x, out [R, d] F32; weight [d] F32, bias [d] F32 or empty. Sums in double.
void rms_norm(ThreadPool& pool, const Tensor& x, const Tensor& weight, float eps, const Tensor& out);
void layer_norm(ThreadPool& pool, const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                const Tensor& out);

// x [T, heads, head_dim] F32 in place; positions [T] I32. num_rotated 0 means head_dim.
void rope(ThreadPool& pool, const Tensor& x, const Tensor& positions, const RopeParams& params);

// gate, up, out [T, f] F32.
void swiglu(ThreadPool& pool, const Tensor& gate, const Tensor& up, const Tensor& out);
void geglu(ThreadPool& pool, const Tensor& gate, const Tensor& up, const Tensor& out);
void add(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& out);
void scale(ThreadPool& pool, const Tensor& x, float s, const Tensor& out);
void mul(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& out);
// x [R, C], out [C, R] F32.
void transpose(ThreadPool& pool, const Tensor& x, const Tensor& out);
void softmax(ThreadPool& pool, const Tensor& x, const Tensor& out);

// Signal ops (ops_signal.cpp): shapes and layouts as in backend.h.
void activate(ThreadPool& pool, const Tensor& x, Backend::Activation act, const Tensor& out);
void clamp(ThreadPool& pool, const Tensor& x, float lo, float hi, const Tensor& out);
void add_bias(ThreadPool& pool, const Tensor& x, const Tensor& bias, const Tensor& out);
void snake(ThreadPool& pool, KernelPath path, const Tensor& x, const Tensor& alpha, const Tensor& inv_beta, const Tensor& out);
// The int16 convolutions' quantized input rows (backends/conv_int16.h), kept by the
// backend between calls so a decoder's every conv reuses one allocation.
struct ConvScratch {
  std::vector<int16_t> x;
  std::vector<float> scale;
  std::vector<float> w_narrow;  // an F32 conv's weights transposed when Cin < 16 (conv_kernel.h)
};
void conv1d(ThreadPool& pool, KernelPath path, ConvScratch& scratch, const Tensor& x, const Tensor& w, const Tensor& bias,
            int dilation, const Tensor& out);
void depthwise_conv1d(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out);
void conv_transpose1d(ThreadPool& pool, KernelPath path, ConvScratch& scratch, const Tensor& x, const Tensor& w,
                      const Tensor& bias, int stride, const Tensor& out);

// k, v [T, kv_heads, head_dim] F32; cache.k/v [num_blocks, block_size, kv_heads, head_dim]
// F32 or F16 (rounded to nearest even); slots [T] I32.
void write_kv(ThreadPool& pool, const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots);

// q, out [T, heads, head_dim] F32; cache as in write_kv.
void attention(ThreadPool& pool, KernelPath path, const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
               const AttentionParams& params, const Tensor& out);

}  // namespace sluice::backends::cpu
