#pragma once
// The device interface every backend implements (CPU now; CUDA and Metal later).
// Models are written once against this op set; each backend makes it fast.
//
// Conventions for every op:
//   - T is the number of tokens in the step (all sequences of a batch, flattened).
//   - Activations are F32; weights may be any dtype the backend's supports_matmul()
//     accepts; token ids, positions and KV slots are I32.
//   - Outputs are preallocated by the caller; `out` may alias an input only where
//     the op says so.
//   - Batch invariance: each output row depends only on its own input row (and,
//     for attention, its own sequence's KV), computed the same way whatever T is,
//     so a request's result never depends on what else shares the step. (The CUDA
//     backend holds this within a matmul path only: quantized weights take an F32
//     GEMV up to 32 rows and an F16 tensor-core GEMM above, which round differently.)
//   - Ops are enqueued in order on the backend's one stream; synchronize() waits
//     for all of them. A backend is used by one thread at a time (the engine
//     thread of its model); its compute threads live inside it.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/tensor.h"

namespace sluice::backends {

struct MemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};

// Rotary position embedding.
struct RopeParams {
  int num_rotated = 0;       // leading dims of each head that rotate (usually head_dim)
  float theta = 10000.0f;    // base frequency
  bool neox = false;         // pairs (i, i + n/2) as in GPT-NeoX/HF; else adjacent (2i, 2i+1) as in GGML "normal"
  float freq_scale = 1.0f;   // linear position scaling: position * freq_scale
  // Llama 3 frequency scaling (rope_type "llama3"); factor 0 turns it off.
  float llama3_factor = 0.0f;
  float llama3_low_freq_factor = 1.0f;
  float llama3_high_freq_factor = 4.0f;
  int llama3_original_context = 8192;
};

// One sequence's share of a step, for attention over the paged KV cache.
struct SequenceSlice {
  int32_t query_begin = 0;   // first row of the sequence in q / out
  int32_t num_queries = 0;   // rows it has in this step (a prefill chunk or 1 decode token)
  int32_t num_cached = 0;    // tokens in the KV cache before this step: query i sits at position num_cached + i
  std::vector<int32_t> block_table;  // its KV blocks in order; covers num_cached + num_queries tokens
};

struct AttentionParams {
  float scale = 1.0f;        // applied to q.k
  int32_t sliding_window = 0;  // > 0: a query sees only the last `sliding_window` positions (itself included)
  float softcap = 0.0f;      // > 0: logits = softcap * tanh(logits / softcap)
};

// The KV cache of one layer: [num_blocks, block_size, num_kv_heads, head_dim] each,
// F32 or F16. Block ids index dimension 0 and are shared by all layers.
struct KvLayer {
  Tensor k;
  Tensor v;
};

// Sampling on the device (Backend::sample): one row's settings, with the logit
// processors that depend on the request's history already resolved on the host.
struct LogitAdjust {
  int32_t token = 0;
  float bias = 0.0f;        // added first (logit_bias)
  float repetition = 1.0f;  // then, != 1: positive logits divided by it, others multiplied
  float subtract = 0.0f;    // then subtracted (frequency * count + presence)
};

struct RowSampling {
  float temperature = 1.0f;  // < 1e-5: greedy (argmax, lowest id on ties)
  int32_t top_k = 0;         // <= 0: off
  float top_p = 1.0f;        // >= 1: off
  float min_p = 0.0f;        // <= 0: off
  double uniform = 0.0;      // the row's one draw in [0, 1) from its host-side random stream
  int32_t num_logprobs = 0;  // alternatives wanted, 0..kMaxSampledLogprobs
  std::span<const LogitAdjust> adjust;  // distinct tokens
};

inline constexpr int kMaxSampledLogprobs = 20;

struct SampledToken {
  int32_t token = 0;
  float logprob = 0.0f;  // of `token` under log_softmax of the RAW logits
  int32_t num_top = 0;
  int32_t top_tokens[kMaxSampledLogprobs] = {};  // best first, lower id on ties (raw logits)
  float top_logprobs[kMaxSampledLogprobs] = {};
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;  // "cpu", "cuda:0"
  virtual DeviceKind device() const = 0;
  virtual MemoryInfo memory_info() const = 0;

  // --- memory -------------------------------------------------------------------
  virtual std::unique_ptr<Buffer> allocate(size_t bytes) = 0;
  // Weight bytes that live in host memory (an mmap'd file): the CPU backend wraps
  // them without a copy, a GPU backend copies them to the device as they are
  // (quantized stays quantized). `bytes` must outlive the buffer.
  virtual std::unique_ptr<Buffer> wrap_weights(std::span<const std::byte> bytes) = 0;
  // A weight matrix [rows, cols] of `dtype` that matmul() will read: as
  // wrap_weights by default; a backend may also keep a layout of its own that its
  // kernels read faster (the CPU repacks quantized rows into interleaved groups).
  // Every op still sees the tensor's own dtype and bytes (embed reads them).
  virtual std::unique_ptr<Buffer> wrap_matrix(std::span<const std::byte> bytes, DType dtype, int64_t rows,
                                              int64_t cols);
  // Bytes of weight layouts the backend made itself (repacked or quantized at
  // load), beyond the weights as loaded.
  virtual uint64_t made_weight_bytes() const { return 0; }
  // The kernel path matmul runs ("avx512-vnni", "cublas"...), for the load log.
  virtual std::string kernel_path() const { return name(); }
  // dst must be contiguous and src.size() == dst.num_bytes().
  virtual void upload(const Tensor& dst, std::span<const std::byte> src) = 0;
  virtual void download(const Tensor& src, std::span<std::byte> dst) = 0;
  virtual void fill_zero(const Tensor& dst) = 0;
  // dst = src, same dtype and shape, both on this backend (benchmarks measure the
  // device's copy bandwidth with it).
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  virtual void synchronize() = 0;

  // Whether matmul() takes weights of this dtype.
  virtual bool supports_matmul(DType weight_dtype) const = 0;
  // Whether attention() takes this head layout (a GPU kernel has limits); checked
  // when a model loads, so an unsupported model fails there and not mid-step.
  virtual bool supports_attention(int64_t heads, int64_t kv_heads, int64_t head_dim) const;

  // --- ops (shapes as row-major [outer, ..., inner]) ---------------------------
  // out[t] = table[ids[t]] dequantized.  table [vocab, d] any matmul dtype; ids [T]; out [T, d]
  virtual void embed(const Tensor& table, const Tensor& ids, const Tensor& out) = 0;
  // y = x · wᵀ.  x [T, in]; w [out, in]; y [T, out]
  virtual void matmul(const Tensor& x, const Tensor& w, const Tensor& y) = 0;
  // Per row of the last dim: out = x / rms(x) * weight.  x, out [R, d]; weight [d] F32. out may alias x.
  virtual void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) = 0;
  // out = (x - mean) / sqrt(var + eps) * weight + bias (bias optional). out may alias x.
  virtual void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                          const Tensor& out) = 0;
  // In place.  x [T, heads, head_dim]; positions [T]
  virtual void rope(const Tensor& x, const Tensor& positions, const RopeParams& params) = 0;
  // out = silu(gate) * up, and gelu_tanh(gate) * up.  gate, up, out [T, f]; out may alias gate.
  virtual void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) = 0;
  virtual void geglu(const Tensor& gate, const Tensor& up, const Tensor& out) = 0;
  // out = a + b, and out = x * s. Same shapes; out may alias an input.
  virtual void add(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  virtual void scale(const Tensor& x, float s, const Tensor& out) = 0;
  // out = a * b element-wise. Same shapes; out may alias an input.
  virtual void mul(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  // out[c, r] = x[r, c].  x [R, C] F32; out [C, R] F32, not aliasing x. Reductions
  // over rows (time) become row ops on the transpose (softmax, a matmul by a vector).
  virtual void transpose(const Tensor& x, const Tensor& out) = 0;
  // Row-wise softmax over the last dim. out may alias x.
  virtual void softmax(const Tensor& x, const Tensor& out) = 0;
  // --- signal ops (the Qwen3-TTS codec decoder and speaker encoder) ------------
  // A signal of T time steps and C channels is [T, C] F32: time runs along rows,
  // like tokens. Convolutions are causal and take their left context as leading
  // input rows (zeros at the start of a stream, the previous chunk's last input
  // rows when streaming), and each output row is computed in a fixed order from
  // its own window, so a stream decoded chunk by chunk equals one whole pass bit
  // for bit. Weights are F32, laid out tap-major at load (see each op).
  enum class Activation { silu, gelu_erf, elu, sigmoid, tanh, sqrt, log };
  // out = act(x) element-wise (gelu_erf: the exact GELU, x * Phi(x); elu: x for x > 0,
  // else expm1(x), alpha 1, the codec encoder's; sqrt and log of a negative give NaN,
  // log(0) -inf, as libm). out may alias x.
  virtual void activate(const Tensor& x, Activation act, const Tensor& out) = 0;
  // out = min(max(x, lo), hi). out may alias x.
  virtual void clamp(const Tensor& x, float lo, float hi, const Tensor& out) = 0;
  // out[r] = x[r] + bias.  x, out [R, n]; bias [n] F32. out may alias x.
  virtual void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) = 0;
  // SnakeBeta with its per-channel parameters already exponentiated at load:
  // out = x + inv_beta[c] * sin(alpha[c] * x)^2.  x, out [T, C]; alpha, inv_beta [C]. out may alias x.
  virtual void snake(const Tensor& x, const Tensor& alpha, const Tensor& inv_beta, const Tensor& out) = 0;
  // Dilated causal conv, k = w.cols() / Cin taps:
  //   out[t, o] = bias[o] + sum_j sum_c w[o, j*Cin + c] * x[t + j*dilation, c]
  // x [T + (k-1)*dilation, Cin]; w [Cout, k*Cin] (PyTorch's [Cout, Cin, k] with the
  // tap moved outward); bias [Cout] F32 or a null view; out [T, Cout], not aliasing x.
  // A Linear layer with bias is k = 1. The CPU backend also takes w as
  // backends/conv_int16.h's I16 rows or conv_panels.h's 3-D F32 panels (here and
  // in conv_transpose1d).
  virtual void conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, int dilation, const Tensor& out) = 0;
  // Depthwise causal conv: out[t, c] = bias[c] + sum_j w[c, j] * x[t + j, c].
  // x [T + k - 1, C]; w [C, k]; bias [C] or null; out [T, C], not aliasing x.
  virtual void depthwise_conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out) = 0;
  // Causal transposed conv with stride s and kernel K = m*s whose last K - s
  // outputs are trimmed (the codec's upsampler): each output phase r < s is an
  // m-tap conv of the input, so
  //   out[t*s + r, o] = bias[o] + sum_q sum_c w[r*Cout + o, q*Cin + c] * x[t + q, c]
  // x [T + m - 1, Cin] (m - 1 rows of left context); w [s*Cout, m*Cin], repacked at
  // load from PyTorch's [Cin, Cout, K] as w[r*Cout + o, q*Cin + c] = W[c, o, r + (m-1-q)*s];
  // bias [Cout] or null; out [T*s, Cout], not aliasing x.
  virtual void conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias, int stride,
                                const Tensor& out) = 0;

  // Stores k[t], v[t] at slot slots[t] = block * block_size + offset of `cache`;
  // a negative slot skips its row (padding rows of a recorded step, below).
  // k, v [T, kv_heads, head_dim]; slots [T]
  virtual void write_kv(const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots) = 0;
  // Causal attention of each sequence's queries over its cached keys/values
  // (written by write_kv first), grouped-query heads (heads % kv_heads == 0).
  // q, out [T, heads, head_dim]
  virtual void attention(const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
                         const AttentionParams& params, const Tensor& out) = 0;

  // --- fused ops ------------------------------------------------------------------
  // Each default composes the ops above, so a backend without a fused kernel gives
  // the same result; a backend overrides them to read activations once.
  // ys[i] = x · ws[i]ᵀ for weights that share one input (Q, K and V).  ys[i] [T, out_i]
  virtual void matmul_shared_input(const Tensor& x, std::span<const Tensor> ws, std::span<const Tensor> ys);
  // hidden += branch, then normed = rms_norm(hidden) * weight.  hidden, branch, normed [R, d]
  virtual void add_rms_norm(const Tensor& hidden, const Tensor& branch, const Tensor& weight, float eps,
                            const Tensor& normed);
  // out = act(x · w_gateᵀ) * (x · w_upᵀ), act = gelu_tanh when `gelu` else silu.
  // x [T, in]; w_gate, w_up [f, in]; out, scratch [T, f] (the default's `up`).
  virtual void gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up, bool gelu,
                         const Tensor& scratch, const Tensor& out);
  // rope(q), rope(k), then write_kv(k, v): the rotated k goes to the cache (and back
  // into k). q [T, heads, hd]; k, v [T, kv_heads, hd]; positions, slots [T].
  virtual void rope_write_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                             const RopeParams& rope, const KvLayer& cache, const Tensor& slots);

  // --- step structure --------------------------------------------------------------
  // Called once per forward pass before its first op, with the step's sequences
  // (rows beyond them, up to num_rows, are padding). A GPU backend uploads the
  // attention metadata here, so attention() reads it from device memory: the
  // `sequences` given to attention() in the step must be these (a backend may use
  // either). Attention output rows of padding are unspecified (CUDA: zeros).
  virtual void begin_step(std::span<const SequenceSlice> sequences, int64_t num_rows);
  // Recorded steps (CUDA graphs): for a decode-only step of num_tokens rows, the
  // number of rows the backend records such steps at (a bucket >= num_tokens; the
  // caller pads up to it), or 0 when it does not record. The default records nothing.
  virtual int64_t recorded_step_rows(int64_t num_tokens) const;
  // Runs `ops`. A recording backend captures them the first time for `key` and
  // replays the capture afterwards, so `ops` must be the same op sequence on the
  // same tensors for a key and take every per-step value from device memory
  // (uploaded before the call, and begin_step's metadata), never from the host.
  virtual void run_recorded(int64_t key, const std::function<void()>& ops);
  // Drops every recording (the tensors they captured moved, e.g. a workspace grew).
  virtual void forget_recordings();

  // --- host work of a step ---------------------------------------------------------
  // Runs fn(begin, end) on disjoint ranges covering [0, n), at most host_threads() of
  // them at once, and returns when all are done: the CPU backend lends its compute
  // pool (idle between ops), so per-row host work such as sampling runs in parallel.
  // The default runs fn(0, n) on the caller. fn must not throw.
  virtual int host_threads() const { return 1; }
  virtual void host_parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) { fn(0, n); }

  // --- sampling on the device ------------------------------------------------------
  // Whether sample() is implemented; when not, the engine downloads the logits and
  // samples on the host.
  virtual bool supports_sampling() const;
  // Draws one token per row of logits [R, vocab] F32 (raw model output, left on the
  // device by the step): processors (adjust, temperature, top_k, top_p, min_p) as
  // the host sampler orders them, then an inverse-CDF draw with rows[r].uniform
  // over the kept tokens in id order. Only out[] comes back to the host.
  virtual void sample(const Tensor& logits, std::span<const RowSampling> rows, std::span<SampledToken> out);
};

// The CPU backend with `num_threads` compute threads (0: one per core), on the
// kernel path chosen at start (backends/cpu/quant/cpu_features.h).
std::unique_ptr<Backend> make_cpu_backend(int num_threads = 0);
// The CPU backend on the f32 path: activations never quantized, weights expanded
// to F32. Reference numerics for parity tests; several times slower.
std::unique_ptr<Backend> make_reference_cpu_backend(int num_threads = 0);

}  // namespace sluice::backends
