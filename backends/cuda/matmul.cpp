// matmul, gated_mlp and embed of the CUDA backend.
//
// Weights F32 / F16 / BF16: cuBLAS (F32 accumulation; 16-bit weights take x rounded
// to the same 16-bit type, since cuBLAS wants A and B of one type; never TF32), except
// that 16-bit weights in steps of up to 8 tokens take the GEMV below (x in F32).
// Quantized weights: the GEMV kernels (k_quant.cu) for up to kGemvMaxTokens tokens,
// else tiles of weight rows dequantized to F16 and cuBLAS F16 GEMMs on tensor cores.
//
// Row-major y[T, out] = x[T, in] · w[out, in]ᵀ is, in cuBLAS's column-major terms,
// C (out x T) = Aᵀ · B with A = w seen as an (in x out) matrix with lda = w's row
// stride, B = x seen as (in x T) with ldb = x's row stride, and ldc = y's row stride.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "backends/check.h"
#include "backends/cuda/cuda_backend_impl.h"
#include "backends/cuda/cuda_error.h"

namespace sluice::backends::cuda {
namespace {

// Up to this many tokens, quantized weights go through the GEMV in passes of
// kQuantGemvMaxRows tokens. Each pass streams the weights once (~0.6 bytes per weight
// for 4-bit types); the F16 route writes and re-reads 2 bytes per weight on top, so
// a few passes still move less memory (a guess, not measured: no GPU at hand). It
// also keeps every token of a recorded decode step of up to 32 rows on one code path.
constexpr int64_t kGemvMaxTokens = 4 * kQuantGemvMaxRows;
// F16 weight rows dequantized per cuBLAS call on the long-prompt path.
constexpr size_t kWeightTileBytes = size_t{64} << 20;

bool is_float_dtype(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

int to_int(int64_t v, const char* what) {
  SLUICE_CHECK(v >= 0 && v <= INT_MAX, what);
  return static_cast<int>(v);
}

// Row stride in elements of a tensor of `elem_bytes`-byte elements.
int64_t stride_of(const Tensor& t, size_t elem_bytes) {
  SLUICE_CHECK(t.row_stride % elem_bytes == 0, "matmul: row stride is not a whole number of elements");
  return row_stride_elems(t, elem_bytes);
}

void check_matmul(const Tensor& x, const Tensor& w, const Tensor& y) {
  SLUICE_CHECK(x.dtype == DType::F32 && y.dtype == DType::F32, "matmul: x and y must be F32");
  SLUICE_CHECK(is_float_dtype(w.dtype) || quant_kernels_support(w.dtype), "matmul: unsupported weight dtype");
  SLUICE_CHECK(w.ndim == 2, "matmul: w must be [out, in]");
  SLUICE_CHECK(x.cols() == w.cols(), "matmul: x and w disagree on `in`");
  SLUICE_CHECK(y.cols() == w.dim(0) && y.rows() == x.rows(), "matmul: y must be [T, out]");
}

// C (m x n, ldc) = Aᵀ · B in F32, A and B of `type` (see the top of the file).
void gemm_tn(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const void* b,
             int64_t ldb, cudaDataType type, float* c, int64_t ldc) {
  const float alpha = 1.0f, beta = 0.0f;  // host pointer mode: captured by value into graphs
  SLUICE_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, to_int(m, "gemm: m too large"),
                                   to_int(n, "gemm: n too large"), to_int(k, "gemm: k too large"), &alpha, a, type,
                                   to_int(lda, "gemm: lda too large"), b, type, to_int(ldb, "gemm: ldb too large"),
                                   &beta, c, CUDA_R_32F, to_int(ldc, "gemm: ldc too large"), CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
}

// x as the GEMV kernels read it (rows 16-byte aligned, for float4 loads): itself, or a
// contiguous copy in `scratch` when a view breaks the alignment.
const float* gemv_input(const Tensor& x, Scratch& scratch, cudaStream_t stream, int64_t* stride) {
  const float* p = device_ptr_as<const float>(x);
  if (reinterpret_cast<uintptr_t>(p) % 16 == 0 && x.row_stride % 16 == 0) {
    *stride = stride_of(x, sizeof(float));
    return p;
  }
  const size_t row_bytes = static_cast<size_t>(x.cols()) * sizeof(float);
  const size_t padded = (row_bytes + 15) / 16 * 16;
  auto* copy = static_cast<float*>(scratch.get(padded * static_cast<size_t>(x.rows())));
  SLUICE_CUDA_CHECK(cudaMemcpy2DAsync(copy, padded, p, x.row_stride, row_bytes, static_cast<size_t>(x.rows()),
                                      cudaMemcpyDeviceToDevice, stream));
  *stride = static_cast<int64_t>(padded / sizeof(float));
  return copy;
}

// F16/BF16 weights take the GEMV for steps of up to kQuantGemvMaxRows tokens (one
// pass, x kept in F32); longer steps and F32 weights take cuBLAS.
bool takes_float_gemv(const Tensor& w, int64_t num_tokens) {
  return num_tokens <= kQuantGemvMaxRows && gemv_takes_float_weights(w.dtype, device_ptr(w), w.row_stride, w.cols());
}

}  // namespace

bool CudaBackend::supports_matmul(DType weight_dtype) const {
  return is_float_dtype(weight_dtype) || quant_kernels_support(weight_dtype);
}

void CudaBackend::embed(const Tensor& table, const Tensor& ids, const Tensor& out) {
  SLUICE_CHECK(table.ndim == 2 && supports_matmul(table.dtype), "embed: table must be [vocab, d] of a matmul dtype");
  SLUICE_CHECK(ids.dtype == DType::I32 && ids.is_contiguous(), "embed: ids must be contiguous I32");
  SLUICE_CHECK(out.dtype == DType::F32 && out.cols() == table.cols() && out.rows() == ids.num_elements(),
               "embed: out must be [T, d] F32");
  // Ids are in device memory: their range is the caller's to guarantee (negative ids
  // give zero rows, see k_quant.cu).
  if (out.rows() == 0 || out.cols() == 0) return;
  launch_embed(device_ptr(table), table.dtype, table.row_stride, table.cols(), device_ptr_as<const int32_t>(ids),
               out.rows(), device_ptr_as<float>(out), stride_of(out, sizeof(float)), stream_);
}

void CudaBackend::matmul(const Tensor& x, const Tensor& w, const Tensor& y) {
  check_matmul(x, w, y);
  const int64_t num_tokens = x.rows();
  const int64_t in = x.cols();
  const int64_t out = w.dim(0);
  if (num_tokens == 0 || out == 0) return;
  if (in == 0) {  // an empty sum: zeros, without asking cuBLAS about k = 0
    SLUICE_CUDA_CHECK(cudaMemset2DAsync(device_ptr(y), y.row_stride, 0, y.row_bytes(),
                                        static_cast<size_t>(num_tokens), stream_));
    return;
  }
  if (is_float_dtype(w.dtype) && !takes_float_gemv(w, num_tokens)) {
    gemm(x, w, y);
    return;
  }

  float* yp = device_ptr_as<float>(y);
  const int64_t y_stride = stride_of(y, sizeof(float));
  if (num_tokens <= kGemvMaxTokens) {
    int64_t x_stride = 0;
    const float* xp = gemv_input(x, activation_scratch_, stream_, &x_stride);
    for (int64_t t = 0; t < num_tokens; t += kQuantGemvMaxRows) {
      const int64_t rows = std::min<int64_t>(kQuantGemvMaxRows, num_tokens - t);
      launch_quant_gemv(xp + t * x_stride, x_stride, rows, device_ptr(w), w.dtype, w.row_stride, out, in,
                        yp + t * y_stride, y_stride, stream_);
    }
    return;
  }

  // Long prompts: x to F16 once, then per tile of weight rows: dequantize to F16 and
  // one tensor-core GEMM into the tile's columns of y. The tiles reuse one scratch
  // area; the stream orders each tile's dequantization after the previous GEMM.
  auto* x16 = activation_scratch_.get(static_cast<size_t>(num_tokens * in) * 2);
  launch_convert_f32(device_ptr_as<const float>(x), stride_of(x, sizeof(float)), {num_tokens, in}, DType::F16, x16,
                     stream_);
  const int64_t row_f16_bytes = in * 2;
  int64_t tile_rows = std::max<int64_t>(1, static_cast<int64_t>(kWeightTileBytes) / row_f16_bytes);
  if (tile_rows >= 128) tile_rows -= tile_rows % 128;  // keeps each tile's y columns 512-byte aligned
  tile_rows = std::min(tile_rows, out);
  auto* w16 = weight_scratch_.get(static_cast<size_t>(tile_rows * row_f16_bytes));
  for (int64_t first = 0; first < out; first += tile_rows) {
    const int64_t rows = std::min(tile_rows, out - first);
    launch_dequantize_f16(device_ptr(w), w.dtype, w.row_stride, first, rows, in, w16, stream_);
    gemm_tn(cublas_, rows, num_tokens, in, w16, in, x16, in, CUDA_R_16F, yp + first, y_stride);
  }
}

void CudaBackend::gemm(const Tensor& x, const Tensor& w, const Tensor& y) {
  const int64_t num_tokens = x.rows();
  const int64_t in = x.cols();
  const int64_t out = w.dim(0);
  float* yp = device_ptr_as<float>(y);
  const int64_t y_stride = stride_of(y, sizeof(float));
  if (w.dtype == DType::F32) {
    gemm_tn(cublas_, out, num_tokens, in, device_ptr(w), stride_of(w, 4), device_ptr(x), stride_of(x, 4),
            CUDA_R_32F, yp, y_stride);
    return;
  }
  SLUICE_CHECK(w.dtype == DType::F16 || w.dtype == DType::BF16, "gemm: F32, F16 or BF16 weights");
  auto* x16 = activation_scratch_.get(static_cast<size_t>(num_tokens * in) * 2);
  launch_convert_f32(device_ptr_as<const float>(x), stride_of(x, sizeof(float)), {num_tokens, in}, w.dtype, x16,
                     stream_);
  gemm_tn(cublas_, out, num_tokens, in, device_ptr(w), stride_of(w, 2), x16, in,
          w.dtype == DType::F16 ? CUDA_R_16F : CUDA_R_16BF, yp, y_stride);
}

void CudaBackend::gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up, bool gelu,
                            const Tensor& scratch, const Tensor& out) {
  SLUICE_CHECK(w_gate.dtype == w_up.dtype && w_gate.ndim == 2 && w_up.ndim == 2 && w_gate.dim(0) == w_up.dim(0) &&
                   w_gate.cols() == w_up.cols(),
               "gated_mlp: w_gate and w_up must be [f, in] of one dtype");
  check_matmul(x, w_gate, out);
  SLUICE_CHECK(scratch.dtype == DType::F32 && scratch.rows() == out.rows() && scratch.cols() == out.cols(),
               "gated_mlp: scratch must be [T, f] F32");
  const int64_t num_tokens = x.rows();
  const int64_t in = x.cols();
  const int64_t f = w_gate.dim(0);
  if (num_tokens == 0 || f == 0) return;

  // Decode: one pass over both weights, the activation applied in the epilogue.
  const bool gemv = quant_kernels_support(w_gate.dtype) ? num_tokens <= kGemvMaxTokens
                                                        : takes_float_gemv(w_gate, num_tokens) &&
                                                              takes_float_gemv(w_up, num_tokens);
  if (gemv && w_gate.row_stride == w_up.row_stride) {
    int64_t x_stride = 0;
    const float* xp = gemv_input(x, activation_scratch_, stream_, &x_stride);
    float* op = device_ptr_as<float>(out);
    const int64_t out_stride = stride_of(out, sizeof(float));
    for (int64_t t = 0; t < num_tokens; t += kQuantGemvMaxRows) {
      const int64_t rows = std::min<int64_t>(kQuantGemvMaxRows, num_tokens - t);
      launch_quant_gemv_gated(xp + t * x_stride, x_stride, rows, device_ptr(w_gate), device_ptr(w_up), w_gate.dtype,
                              w_gate.row_stride, f, in, gelu, op + t * out_stride, out_stride, stream_);
    }
    return;
  }

  // Otherwise as Backend::gated_mlp: two matmuls, then act(gate) * up in place.
  matmul(x, w_gate, out);
  matmul(x, w_up, scratch);
  float* op = device_ptr_as<float>(out);
  const int64_t out_stride = stride_of(out, sizeof(float));
  launch_binary(gelu ? BinaryOp::geglu : BinaryOp::swiglu, op, out_stride, device_ptr_as<const float>(scratch),
                stride_of(scratch, sizeof(float)), op, out_stride, {num_tokens, f}, stream_);
}

}  // namespace sluice::backends::cuda
