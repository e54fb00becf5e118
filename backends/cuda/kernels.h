#pragma once
// Launchers of the CUDA kernels, callable from plain C++ (the .cpp files of the
// backend); each .cu file defines the launchers of its kernels. All launch on
// `stream` and return at once. Strides are in elements; every F32 row is
// contiguous within itself. Pointers are device pointers unless said otherwise.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/dtype.h"

namespace sluice::backends::cuda {

// --- norms and element-wise (k_norm.cu, k_elementwise.cu) -------------------------
struct Rows2D {
  int64_t rows = 0;
  int64_t cols = 0;
};

void launch_rms_norm(const float* x, int64_t x_stride, const float* weight, float eps, float* out,
                     int64_t out_stride, Rows2D shape, cudaStream_t stream);
// hidden += branch; normed = rms_norm(hidden) * weight
void launch_add_rms_norm(float* hidden, int64_t hidden_stride, const float* branch, int64_t branch_stride,
                         const float* weight, float eps, float* normed, int64_t normed_stride, Rows2D shape,
                         cudaStream_t stream);
// bias may be null
void launch_layer_norm(const float* x, int64_t x_stride, const float* weight, const float* bias, float eps,
                       float* out, int64_t out_stride, Rows2D shape, cudaStream_t stream);

enum class BinaryOp { add, mul, swiglu, geglu };
void launch_binary(BinaryOp op, const float* a, int64_t a_stride, const float* b, int64_t b_stride, float* out,
                   int64_t out_stride, Rows2D shape, cudaStream_t stream);
void launch_scale(const float* x, int64_t x_stride, float s, float* out, int64_t out_stride, Rows2D shape,
                  cudaStream_t stream);
void launch_softmax(const float* x, int64_t x_stride, float* out, int64_t out_stride, Rows2D shape,
                    cudaStream_t stream);
// out [shape.cols, shape.rows] = x [shape.rows, shape.cols] transposed.
void launch_transpose(const float* x, int64_t x_stride, float* out, int64_t out_stride, Rows2D shape,
                      cudaStream_t stream);

// --- signal ops of the codec decoder (k_signal.cu) ------------------------------
// Shapes and formulas as in backend.h. Element-wise ops may run in place.
enum class SignalActivation { silu, gelu_erf, elu, sigmoid, tanh, sqrt, log };
void launch_activate(SignalActivation act, const float* x, int64_t x_stride, float* out, int64_t out_stride,
                     Rows2D shape, cudaStream_t stream);
void launch_clamp(const float* x, int64_t x_stride, float lo, float hi, float* out, int64_t out_stride, Rows2D shape,
                  cudaStream_t stream);
// out[r] = x[r] + bias (bias [cols])
void launch_add_bias(const float* x, int64_t x_stride, const float* bias, float* out, int64_t out_stride,
                     Rows2D shape, cudaStream_t stream);
void launch_snake(const float* x, int64_t x_stride, const float* alpha, const float* inv_beta, float* out,
                  int64_t out_stride, Rows2D shape, cudaStream_t stream);
// out [shape.rows, C]; x [shape.rows + taps - 1, C]; w [C, taps] (rows w_stride apart); bias [C] or null.
void launch_depthwise_conv1d(const float* x, int64_t x_stride, const float* w, int64_t w_stride, int taps,
                             const float* bias, float* out, int64_t out_stride, Rows2D shape, cudaStream_t stream);

// conv1d, and conv_transpose1d as a conv with stride * Cout output columns
// (column c of output row t is element c % period of out row t*stride + c / period).
struct ConvLaunch {
  const float* x = nullptr;  // [rows + (taps-1)*step, cin]
  int64_t x_stride = 0;
  int step = 1;              // input rows between taps (the dilation)
  const float* w = nullptr;  // [columns, taps * cin], rows w_stride apart
  int64_t w_stride = 0;
  int64_t cin = 0;
  int taps = 1;
  const float* bias = nullptr;  // [period] or null
  float* y = nullptr;           // element (t, c) at y[t*y_stride + (c / period)*phase_stride + c % period]
  int64_t y_stride = 0;
  int64_t period = 0;
  int64_t phase_stride = 0;
  int64_t rows = 0;     // output steps
  int64_t columns = 0;  // output columns
};
void launch_conv(const ConvLaunch& conv, cudaStream_t stream);

// --- rotary embedding and the KV cache (k_rope_kv.cu) -------------------------------
struct RopeArgs {
  int num_rotated = 0;  // even, <= head_dim
  float theta = 10000.0f;
  bool neox = false;
  float freq_scale = 1.0f;
  float llama3_factor = 0.0f;  // 0: off
  float llama3_low_freq_factor = 1.0f;
  float llama3_high_freq_factor = 4.0f;
  float llama3_original_context = 8192.0f;
};

struct KvCacheArgs {
  void* k = nullptr;  // [num_slots, kv_heads, head_dim] F32 or F16
  void* v = nullptr;
  bool f16 = true;
  int64_t num_slots = 0;
};

// In place on x [T, heads, head_dim] (contiguous).
void launch_rope(float* x, int64_t num_tokens, int heads, int head_dim, const int32_t* positions,
                 const RopeArgs& rope, cudaStream_t stream);
// Rotates q [T, heads, hd] and k [T, kv_heads, hd] in place (when rope is non-null,
// else neither; q may be null), then stores k and v [T, kv_heads, hd] at slots[t]
// of the cache; negative slots are skipped.
void launch_rope_write_kv(float* q, int heads, float* k, const float* v, int kv_heads, int head_dim,
                          int64_t num_tokens, const int32_t* positions, const RopeArgs* rope,
                          const KvCacheArgs& cache, const int32_t* slots, cudaStream_t stream);

// --- paged attention (k_attention.cu) ------------------------------------------------
// The step's sequences as begin_step laid them out in device memory.
struct AttentionMeta {
  const int32_t* row_sequence = nullptr;  // [rows]: sequence of each query row, -1 for padding
  const int32_t* sequences = nullptr;     // [S][3]: query_begin, num_queries, num_cached
  const int32_t* block_tables = nullptr;  // [S][table_stride]
  const int32_t* table_stride = nullptr;  // one value, so recorded steps see the current one
};

struct AttentionArgs {
  int64_t rows = 0;  // T (padding rows included)
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;  // <= kAttentionMaxHeadDim, a multiple of 8
  int block_size = 0;
  float scale = 1.0f;
  int sliding_window = 0;
  float softcap = 0.0f;
};
inline constexpr int kAttentionMaxHeadDim = 256;
inline constexpr int kAttentionMaxGroup = 8;  // heads per KV head

// Device scratch bytes for launching with the work split across more warps (few
// rows: decode), or 0 when the launch should not split. Either way gives the same bits.
size_t attention_split_scratch_bytes(const AttentionArgs& args);
// q, out [T, heads, head_dim] contiguous F32; cache as KvCacheArgs; split_scratch of
// attention_split_scratch_bytes(args) bytes, or null for the unsplit launch.
void launch_attention(const float* q, const KvCacheArgs& cache, const AttentionMeta& meta,
                      const AttentionArgs& args, float* out, float* split_scratch, cudaStream_t stream);

// --- matmul helpers and quantized weights (k_convert.cu, k_quant.cu) ---------------
// x [rows, cols] F32 (stride x_stride) -> out [rows, cols] contiguous F16 or BF16.
void launch_convert_f32(const float* x, int64_t x_stride, Rows2D shape, DType out_dtype, void* out,
                        cudaStream_t stream);

// Whether the quantized kernels below take this dtype (F32/F16/BF16 go to cuBLAS).
bool quant_kernels_support(DType dtype);
// out[t] = dequantize(table row ids[t]); table rows are `row_bytes` apart, `dim`
// elements each, of any supported dtype (F32/F16/BF16 and quantized).
void launch_embed(const void* table, DType dtype, size_t row_bytes, int64_t dim, const int32_t* ids,
                  int64_t num_tokens, float* out, int64_t out_stride, cudaStream_t stream);
// y[t][o] = sum_k x[t][k] * w[o][k] for a quantized w [out, in] (rows row_bytes apart),
// or an F16/BF16 one that gemv_takes_float_weights, for few rows of x (decode). Reads
// each weight block once for all T rows; a row's result does not depend on T.
inline constexpr int kQuantGemvMaxRows = 8;
bool gemv_takes_float_weights(DType dtype, const void* w, size_t w_row_bytes, int64_t in_features);
void launch_quant_gemv(const float* x, int64_t x_stride, int64_t num_tokens, const void* w, DType dtype,
                       size_t w_row_bytes, int64_t out_features, int64_t in_features, float* y, int64_t y_stride,
                       cudaStream_t stream);
// out[t][o] = act(x·w_gate[o]) * (x·w_up[o]): the gated MLP's two GEMVs and the
// activation in one pass over both weights (decode).
void launch_quant_gemv_gated(const float* x, int64_t x_stride, int64_t num_tokens, const void* w_gate,
                             const void* w_up, DType dtype, size_t w_row_bytes, int64_t out_features,
                             int64_t in_features, bool gelu, float* out, int64_t out_stride, cudaStream_t stream);
// Rows [row_begin, row_begin + num_rows) of a quantized w [.., cols] -> F16 [num_rows, cols].
void launch_dequantize_f16(const void* w, DType dtype, size_t w_row_bytes, int64_t row_begin, int64_t num_rows,
                           int64_t cols, void* out, cudaStream_t stream);

// --- sampling (k_sample.cu) ---------------------------------------------------------------
// Backend::sample's inputs in plain structs (backend.h needs C++20, the kernels are
// built as C++17): one SampleRowArgs per row, every row's adjust entries in one
// array, each row's sorted by token with ids in [0, vocab); results as SampledToken.
inline constexpr int kSampleMaxLogprobs = 20;       // = kMaxSampledLogprobs
inline constexpr int64_t kSampleMaxVocab = 1 << 23;  // fixed-point row mass stays below 2^63

struct SampleAdjust {
  int32_t token = 0;
  float bias = 0.0f;
  float repetition = 1.0f;
  float subtract = 0.0f;
};

struct SampleRowArgs {
  double uniform = 0.0;
  float temperature = 1.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  float min_p = 0.0f;
  int32_t num_logprobs = 0;
  int32_t adjust_begin = 0;  // index of the row's first entry in the adjust array
  int32_t adjust_count = 0;
};

struct SampleOut {
  int32_t token;
  float logprob;
  int32_t num_top;
  int32_t top_tokens[kSampleMaxLogprobs];
  float top_logprobs[kSampleMaxLogprobs];
};

// One token per row of logits [rows, vocab] (rows row_stride elements apart, left
// unmodified); args [rows], out [rows]. Deterministic and batch invariant.
void launch_sample(const float* logits, int64_t row_stride, int64_t rows, int64_t vocab, const SampleRowArgs* args,
                   const SampleAdjust* adjust, SampleOut* out, cudaStream_t stream);

}  // namespace sluice::backends::cuda
