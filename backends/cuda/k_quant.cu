// Quantized (and F32/F16/BF16) weights on the GPU: the embedding gather, the
// dequantization of weight rows to F16 for tensor-core GEMMs (long prompts), and the
// decode GEMVs (quantized, F16 and BF16 weights), which read each weight byte once
// for all of a step's few tokens.
//
// Every kernel works in chunks of 8 values (quant_blocks.cuh): a thread decodes one
// chunk of a block with the CPU's exact arithmetic and uses it at once.
//
// GEMV layout: a block of 128 threads (4 warps) owns 4 weight rows (4 outputs, or 2
// outputs of the gated form: a gate row and an up row each). Its threads stride over
// the rows' chunks; per chunk a thread decodes the 4 rows' 8 values once, then for
// each token loads 8 values of x (two float4) and makes 4 x 8 FMAs. So each weight
// byte is read from memory once per step, and each x load feeds 4 weight rows (x
// comes from L1/L2: it is the same for every block). Partial sums go through a
// warp-shuffle reduction, then the 4 warps' partials are added in a fixed order:
// a token's result does not depend on how many tokens share the launch.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <cstdint>
#include <utility>

#include "backends/check.h"
#include "backends/cuda/cuda_error.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/quant_blocks.cuh"
#include "backends/cuda/reduce.cuh"

namespace sluice::backends::cuda {
namespace {

constexpr int kRowThreads = 128;  // embed / dequantize: one block per row

// --- embed -----------------------------------------------------------------------------

// A negative id (never a real token) gives a zero row instead of a read out of bounds;
// ids past the vocabulary cannot be checked here (the launcher is not told its size).
template <class F>
__global__ void __launch_bounds__(kRowThreads)
    embed_quant_kernel(const uint8_t* table, size_t row_bytes, int64_t dim, const int32_t* ids, float* out,
                       int64_t out_stride) {
  const int32_t id = ids[blockIdx.x];
  float* o = out + blockIdx.x * out_stride;
  if (id < 0) {
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = 0.0f;
    return;
  }
  const uint8_t* row = table + static_cast<size_t>(id) * row_bytes;
  const int64_t num_chunks = dim / F::kBlockElems * F::kChunks;
  for (int64_t c = threadIdx.x; c < num_chunks; c += blockDim.x) {
    float v[8];
    int64_t e0, e1;
    decode_row_chunk<F>(row, c, v, &e0, &e1);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      o[e0 + k] = v[k];
      o[e1 + k] = v[4 + k];
    }
  }
}

template <DType D>
__device__ __forceinline__ float load_plain(const uint8_t* row, int64_t i) {
  static_assert(D == DType::F32 || D == DType::F16 || D == DType::BF16);
  if constexpr (D == DType::F32) {
    return reinterpret_cast<const float*>(row)[i];
  } else if constexpr (D == DType::F16) {
    return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
  } else {
    return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[i]);
  }
}

template <DType D>
__global__ void __launch_bounds__(kRowThreads)
    embed_plain_kernel(const uint8_t* table, size_t row_bytes, int64_t dim, const int32_t* ids, float* out,
                       int64_t out_stride) {
  const int32_t id = ids[blockIdx.x];
  float* o = out + blockIdx.x * out_stride;
  const uint8_t* row = table + static_cast<size_t>(id < 0 ? 0 : id) * row_bytes;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) o[i] = id < 0 ? 0.0f : load_plain<D>(row, i);
}

// --- dequantize to F16 --------------------------------------------------------------------

// Row blockIdx.x of w (already offset to the first row) -> out row blockIdx.x.
template <class F>
__global__ void __launch_bounds__(kRowThreads)
    dequantize_f16_kernel(const uint8_t* w, size_t row_bytes, int64_t cols, __half* out) {
  const uint8_t* row = w + blockIdx.x * row_bytes;
  __half* o = out + blockIdx.x * cols;
  const int64_t num_chunks = cols / F::kBlockElems * F::kChunks;
  for (int64_t c = threadIdx.x; c < num_chunks; c += blockDim.x) {
    float v[8];
    int64_t e0, e1;
    decode_row_chunk<F>(row, c, v, &e0, &e1);
    // Groups start at multiples of 4 elements: 8-byte aligned in an aligned row.
    __half2* g0 = reinterpret_cast<__half2*>(o + e0);
    __half2* g1 = reinterpret_cast<__half2*>(o + e1);
    g0[0] = __floats2half2_rn(v[0], v[1]);
    g0[1] = __floats2half2_rn(v[2], v[3]);
    g1[0] = __floats2half2_rn(v[4], v[5]);
    g1[1] = __floats2half2_rn(v[6], v[7]);
  }
}

// --- GEMV ------------------------------------------------------------------------------------

// F16 and BF16 weights read by the GEMV as a format of 8-element, 16-byte blocks (so
// decode batches read the weights once, with 16-byte loads, x staying in F32; cuBLAS
// would want x rounded to 16 bits and splits K with extra reductions). Rows must be
// 16-byte aligned (gemv_takes_float_weights).
template <bool kBf16>
struct Float16Format {
  static constexpr int kBlockElems = 8, kBlockBytes = 16, kChunks = 1;
  __device__ static int offset(int, int g) { return 4 * g; }
  __device__ static void decode(const uint8_t* b, int, float* v) {
    const uint4 raw = *reinterpret_cast<const uint4*>(b);
    const uint32_t words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const auto lo = static_cast<uint16_t>(words[k] & 0xFFFFu), hi = static_cast<uint16_t>(words[k] >> 16);
      v[2 * k] = kBf16 ? bf16_to_f32(lo) : f16_to_f32(lo);
      v[2 * k + 1] = kBf16 ? bf16_to_f32(hi) : f16_to_f32(hi);
    }
  }
};

// visit_quant_format, plus the 16-bit float formats.
template <class Fn>
bool visit_gemv_format(DType dtype, Fn&& fn) {
  if (dtype == DType::F16) return fn(Float16Format<false>{}), true;
  if (dtype == DType::BF16) return fn(Float16Format<true>{}), true;
  return visit_quant_format(dtype, fn);
}

constexpr int kGemvThreads = 128;
constexpr int kGemvWarps = kGemvThreads / 32;
constexpr int kGemvWeightRows = 4;  // per block: 4 outputs, or 2 gate/up pairs

struct GemvArgs {
  const float* x = nullptr;  // [T, in], rows 16-byte aligned
  int64_t x_stride = 0;
  const uint8_t* w = nullptr;     // [out, in] quantized; the gate weights of the gated form
  const uint8_t* w_up = nullptr;  // gated form only
  size_t row_bytes = 0;
  int64_t out_features = 0;
  int in_features = 0;
  float* y = nullptr;
  int64_t y_stride = 0;
  bool gelu = false;
};

// As k_elementwise.cu (and the CPU) write them, so the fused and unfused paths agree.
__device__ __forceinline__ float silu(float x) { return x / (1.0f + expf(-x)); }

__device__ __forceinline__ float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

template <class F, int T, bool kGated>
__global__ void __launch_bounds__(kGemvThreads) quant_gemv_kernel(const GemvArgs a) {
  constexpr int R = kGemvWeightRows;
  constexpr int kOuts = kGated ? R / 2 : R;  // outputs of this block
  const int64_t first_out = static_cast<int64_t>(blockIdx.x) * kOuts;

  // Weight row s: output first_out + s (or + s/2, gate for even s, up for odd s).
  // Rows past the end repeat the last one: read, computed, never written.
  const uint8_t* rows[R];
#pragma unroll
  for (int s = 0; s < R; ++s) {
    int64_t o = first_out + (kGated ? s / 2 : s);
    o = o < a.out_features ? o : a.out_features - 1;
    rows[s] = (kGated && s % 2 == 1 ? a.w_up : a.w) + static_cast<size_t>(o) * a.row_bytes;
  }

  float acc[R][T];
#pragma unroll
  for (int s = 0; s < R; ++s)
#pragma unroll
    for (int t = 0; t < T; ++t) acc[s][t] = 0.0f;

  const int num_chunks = a.in_features / F::kBlockElems * F::kChunks;
  // For few tokens, two chunks per trip, so each thread has both chunks' weight loads
  // in flight; with more tokens the FMAs per chunk hide the latency, and registers
  // (4 x 8 decoded values + 4 x T sums) are better spent on more resident warps.
  constexpr int kUnroll = T <= 4 ? 2 : 1;
#pragma unroll kUnroll
  for (int c = threadIdx.x; c < num_chunks; c += kGemvThreads) {
    const int block = c / F::kChunks;
    const int sub = c % F::kChunks;
    float v[R][8];
#pragma unroll
    for (int s = 0; s < R; ++s) F::decode(rows[s] + static_cast<size_t>(block) * F::kBlockBytes, sub, v[s]);
    const int e0 = block * F::kBlockElems + F::offset(sub, 0);
    const int e1 = block * F::kBlockElems + F::offset(sub, 1);
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float* xt = a.x + t * a.x_stride;
      const float4 x0 = __ldg(reinterpret_cast<const float4*>(xt + e0));
      const float4 x1 = __ldg(reinterpret_cast<const float4*>(xt + e1));
#pragma unroll
      for (int s = 0; s < R; ++s) {
        float r = acc[s][t];
        r = fmaf(v[s][0], x0.x, r);
        r = fmaf(v[s][1], x0.y, r);
        r = fmaf(v[s][2], x0.z, r);
        r = fmaf(v[s][3], x0.w, r);
        r = fmaf(v[s][4], x1.x, r);
        r = fmaf(v[s][5], x1.y, r);
        r = fmaf(v[s][6], x1.z, r);
        r = fmaf(v[s][7], x1.w, r);
        acc[s][t] = r;
      }
    }
  }

  __shared__ float partial[kGemvWarps][R * T];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
#pragma unroll
  for (int s = 0; s < R; ++s)
#pragma unroll
    for (int t = 0; t < T; ++t) {
      const float sum = warp_sum(acc[s][t]);
      if (lane == 0) partial[warp][s * T + t] = sum;
    }
  __syncthreads();

  if (threadIdx.x >= kOuts * T) return;
  const int r = threadIdx.x / T;
  const int t = threadIdx.x % T;
  const int64_t o = first_out + r;
  if (o >= a.out_features) return;
  const auto total = [&](int s) {
    float sum = partial[0][s * T + t];
#pragma unroll
    for (int w = 1; w < kGemvWarps; ++w) sum += partial[w][s * T + t];
    return sum;
  };
  float result;
  if constexpr (kGated) {
    const float g = total(2 * r);
    result = (a.gelu ? gelu_tanh(g) : silu(g)) * total(2 * r + 1);
  } else {
    result = total(r);
  }
  a.y[t * a.y_stride + o] = result;
}

using GemvKernel = void (*)(GemvArgs);

template <class F, bool kGated, int... kTokens>
constexpr std::array<GemvKernel, sizeof...(kTokens)> gemv_kernels(std::integer_sequence<int, kTokens...>) {
  return {&quant_gemv_kernel<F, kTokens + 1, kGated>...};
}

template <bool kGated>
void launch_gemv(DType dtype, const GemvArgs& a, int64_t num_tokens, cudaStream_t stream) {
  SLUICE_CHECK(num_tokens >= 0 && num_tokens <= kQuantGemvMaxRows, "quant gemv: 1 to kQuantGemvMaxRows tokens");
  SLUICE_CHECK(a.out_features >= 0 && a.in_features >= 0, "quant gemv: negative size");
  SLUICE_CHECK(reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && a.x_stride % 4 == 0,
               "quant gemv: x rows must be 16-byte aligned (float4 loads)");
  SLUICE_CHECK(reinterpret_cast<uintptr_t>(a.w) % 2 == 0 && reinterpret_cast<uintptr_t>(a.w_up) % 2 == 0 &&
                   a.row_bytes % 2 == 0,
               "quant gemv: weight rows must be 2-byte aligned");
  if (num_tokens == 0 || a.out_features == 0) return;
  constexpr int kOuts = kGated ? kGemvWeightRows / 2 : kGemvWeightRows;
  const int64_t blocks = (a.out_features + kOuts - 1) / kOuts;
  SLUICE_CHECK(blocks <= INT_MAX, "quant gemv: too many output rows");
  const bool known = visit_gemv_format(dtype, [&](auto format) {
    using F = decltype(format);
    if constexpr (F::kBlockBytes == 16)
      SLUICE_CHECK(reinterpret_cast<uintptr_t>(a.w) % 16 == 0 && reinterpret_cast<uintptr_t>(a.w_up) % 16 == 0 &&
                       a.row_bytes % 16 == 0,
                   "gemv: 16-bit weight rows must be 16-byte aligned");
    SLUICE_CHECK(a.in_features % F::kBlockElems == 0 &&
                     a.row_bytes >= static_cast<size_t>(a.in_features / F::kBlockElems) * F::kBlockBytes,
                 "quant gemv: rows must be whole blocks");
    static constexpr auto kKernels = gemv_kernels<F, kGated>(std::make_integer_sequence<int, kQuantGemvMaxRows>{});
    kKernels[num_tokens - 1]<<<static_cast<unsigned>(blocks), kGemvThreads, 0, stream>>>(a);
    SLUICE_CUDA_LAUNCH_CHECK();
  });
  SLUICE_CHECK(known, "quant gemv: unsupported weight dtype");
}

int checked_int(int64_t v, const char* what) {
  SLUICE_CHECK(v >= 0 && v <= INT_MAX, what);
  return static_cast<int>(v);
}

}  // namespace

bool quant_kernels_support(DType dtype) {
  return visit_quant_format(dtype, [](auto) {});
}

bool gemv_takes_float_weights(DType dtype, const void* w, size_t w_row_bytes, int64_t in_features) {
  return (dtype == DType::F16 || dtype == DType::BF16) && reinterpret_cast<uintptr_t>(w) % 16 == 0 &&
         w_row_bytes % 16 == 0 && in_features % 8 == 0;
}

void launch_embed(const void* table, DType dtype, size_t row_bytes, int64_t dim, const int32_t* ids,
                  int64_t num_tokens, float* out, int64_t out_stride, cudaStream_t stream) {
  if (num_tokens == 0 || dim == 0) return;
  const unsigned grid = static_cast<unsigned>(checked_int(num_tokens, "embed: too many tokens"));
  const auto* t = static_cast<const uint8_t*>(table);
  const auto aligned = [&](size_t bytes) {
    return reinterpret_cast<uintptr_t>(table) % bytes == 0 && row_bytes % bytes == 0;
  };
  switch (dtype) {
    case DType::F32:
      SLUICE_CHECK(aligned(4), "embed: F32 table rows must be 4-byte aligned");
      embed_plain_kernel<DType::F32><<<grid, kRowThreads, 0, stream>>>(t, row_bytes, dim, ids, out, out_stride);
      break;
    case DType::F16:
      SLUICE_CHECK(aligned(2), "embed: F16 table rows must be 2-byte aligned");
      embed_plain_kernel<DType::F16><<<grid, kRowThreads, 0, stream>>>(t, row_bytes, dim, ids, out, out_stride);
      break;
    case DType::BF16:
      SLUICE_CHECK(aligned(2), "embed: BF16 table rows must be 2-byte aligned");
      embed_plain_kernel<DType::BF16><<<grid, kRowThreads, 0, stream>>>(t, row_bytes, dim, ids, out, out_stride);
      break;
    default: {
      const bool known = visit_quant_format(dtype, [&](auto format) {
        using F = decltype(format);
        SLUICE_CHECK(dim % F::kBlockElems == 0, "embed: rows must be whole blocks");
        SLUICE_CHECK(aligned(2), "embed: quantized table rows must be 2-byte aligned");
        embed_quant_kernel<F><<<grid, kRowThreads, 0, stream>>>(t, row_bytes, dim, ids, out, out_stride);
      });
      SLUICE_CHECK(known, "embed: unsupported table dtype");
    }
  }
  SLUICE_CUDA_LAUNCH_CHECK();
}

void launch_quant_gemv(const float* x, int64_t x_stride, int64_t num_tokens, const void* w, DType dtype,
                       size_t w_row_bytes, int64_t out_features, int64_t in_features, float* y, int64_t y_stride,
                       cudaStream_t stream) {
  GemvArgs a;
  a.x = x;
  a.x_stride = x_stride;
  a.w = static_cast<const uint8_t*>(w);
  a.w_up = a.w;
  a.row_bytes = w_row_bytes;
  a.out_features = out_features;
  a.in_features = checked_int(in_features, "quant gemv: in_features too large");
  a.y = y;
  a.y_stride = y_stride;
  launch_gemv<false>(dtype, a, num_tokens, stream);
}

void launch_quant_gemv_gated(const float* x, int64_t x_stride, int64_t num_tokens, const void* w_gate,
                             const void* w_up, DType dtype, size_t w_row_bytes, int64_t out_features,
                             int64_t in_features, bool gelu, float* out, int64_t out_stride, cudaStream_t stream) {
  GemvArgs a;
  a.x = x;
  a.x_stride = x_stride;
  a.w = static_cast<const uint8_t*>(w_gate);
  a.w_up = static_cast<const uint8_t*>(w_up);
  a.row_bytes = w_row_bytes;
  a.out_features = out_features;
  a.in_features = checked_int(in_features, "quant gemv: in_features too large");
  a.y = out;
  a.y_stride = out_stride;
  a.gelu = gelu;
  launch_gemv<true>(dtype, a, num_tokens, stream);
}

void launch_dequantize_f16(const void* w, DType dtype, size_t w_row_bytes, int64_t row_begin, int64_t num_rows,
                           int64_t cols, void* out, cudaStream_t stream) {
  if (num_rows == 0 || cols == 0) return;
  SLUICE_CHECK(row_begin >= 0, "dequantize_f16: negative first row");
  SLUICE_CHECK(reinterpret_cast<uintptr_t>(w) % 2 == 0 && w_row_bytes % 2 == 0,
               "dequantize_f16: weight rows must be 2-byte aligned");
  SLUICE_CHECK(reinterpret_cast<uintptr_t>(out) % 8 == 0, "dequantize_f16: out must be 8-byte aligned");
  const unsigned grid = static_cast<unsigned>(checked_int(num_rows, "dequantize_f16: too many rows"));
  const auto* first = static_cast<const uint8_t*>(w) + static_cast<size_t>(row_begin) * w_row_bytes;
  const bool known = visit_quant_format(dtype, [&](auto format) {
    using F = decltype(format);
    SLUICE_CHECK(cols % F::kBlockElems == 0, "dequantize_f16: rows must be whole blocks");
    dequantize_f16_kernel<F><<<grid, kRowThreads, 0, stream>>>(first, w_row_bytes, cols, static_cast<__half*>(out));
    SLUICE_CUDA_LAUNCH_CHECK();
  });
  SLUICE_CHECK(known, "dequantize_f16: unsupported weight dtype");
}

}  // namespace sluice::backends::cuda
