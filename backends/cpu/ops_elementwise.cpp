// Element-wise ops, the transpose and the row softmax. All F32; out may alias an input, since
// each element is read before it is written and rows are independent.
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/exp_approx.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_common.h"
#include "backends/cpu/quant/cpu_features.h"
#include "backends/cpu/silu_row.h"

namespace sluice::backends::cpu {
namespace {

void check_binary(const Tensor& a, const Tensor& b, const Tensor& out, const char* what) {
  SLUICE_CHECK(a.dtype == DType::F32 && b.dtype == DType::F32 && out.dtype == DType::F32, what);
  SLUICE_CHECK(same_shape(a, b) && same_shape(a, out), what);
}

template <class Fn>
void binary_rows(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& out, Fn&& fn) {
  const int64_t n = a.cols();
  const Rows<const float> ar(a), br(b);
  const Rows<float> outr(out);
  for_each_row(pool, a.rows(), n, [&](int64_t r) {
    const float* ai = ar[r];
    const float* bi = br[r];
    float* yi = outr[r];
    for (int64_t k = 0; k < n; ++k) yi[k] = fn(ai[k], bi[k]);
  });
}

// SwiGLU keeps libm's expf bits, on purpose: the models' activations go through a
// Q8 quantization, where a last-bit change becomes a different rounding step, and a
// vectorized logistic (below) moved SmolLM2's greedy answers (its "capital of
// France" became French nonsense). silu_row.h computes those bits in vectors.
SiluRow silu_row() {
#if defined(SLUICE_X86_KERNELS)
  switch (active_kernel_path()) {
    case KernelPath::avx512_vnni: return avx512_silu_row();
    case KernelPath::avx2:
    case KernelPath::avx2_vnni: return avx2_silu_row();
    default: break;
  }
#endif
  return silu_times_row_impl;
}

// Through exp_approx.h's logistic, so the loop vectorizes (libm's tanhf was a tenth
// of a Gemma 3 decode step): 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)),
// u = sqrt(2 / pi) (x + 0.044715 x^3).
float gelu_tanh(float x) {
  constexpr float kTwoSqrt2OverPi = 1.5957691216057308f;
  return x * logistic(kTwoSqrt2OverPi * (x + 0.044715f * x * x * x));
}

}  // namespace

void swiglu(ThreadPool& pool, const Tensor& gate, const Tensor& up, const Tensor& out) {
  check_binary(gate, up, out, "swiglu: gate, up, out must be F32 of one shape");
  static const SiluRow row = silu_row();
  const Rows<const float> gr(gate), ur(up);
  const Rows<float> outr(out);
  const int64_t n = gate.cols();
  for_each_row(pool, gate.rows(), n, [&](int64_t r) { row(gr[r], ur[r], outr[r], n); });
}

void geglu(ThreadPool& pool, const Tensor& gate, const Tensor& up, const Tensor& out) {
  check_binary(gate, up, out, "geglu: gate, up, out must be F32 of one shape");
  binary_rows(pool, gate, up, out, [](float g, float u) { return gelu_tanh(g) * u; });
}

void add(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_binary(a, b, out, "add: a, b, out must be F32 of one shape");
  binary_rows(pool, a, b, out, [](float x, float y) { return x + y; });
}

void mul(ThreadPool& pool, const Tensor& a, const Tensor& b, const Tensor& out) {
  check_binary(a, b, out, "mul: a, b, out must be F32 of one shape");
  binary_rows(pool, a, b, out, [](float x, float y) { return x * y; });
}

// Tiles of 32 x 32 so both sides are read and written a cache line at a time.
void transpose(ThreadPool& pool, const Tensor& x, const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && out.dtype == DType::F32 && x.ndim == 2 && out.ndim == 2 &&
                   out.dim(0) == x.dim(1) && out.dim(1) == x.dim(0),
               "transpose: x [R, C] and out [C, R] must be F32");
  constexpr int64_t kTile = 32;
  const int64_t rows = x.dim(0), cols = x.dim(1);
  const Rows<const float> xr(x);
  const Rows<float> outr(out);
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  pool.parallel_for(row_tiles * col_tiles, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r0 = item / col_tiles * kTile, c0 = item % col_tiles * kTile;
      for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c)
        for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) outr[c][r] = xr[r][c];
    }
  });
}

void scale(ThreadPool& pool, const Tensor& x, float s, const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && out.dtype == DType::F32 && same_shape(x, out),
               "scale: x, out must be F32 of one shape");
  const int64_t n = x.cols();
  const Rows<const float> xr(x);
  const Rows<float> outr(out);
  for_each_row(pool, x.rows(), n, [&](int64_t r) {
    const float* xi = xr[r];
    float* yi = outr[r];
    for (int64_t k = 0; k < n; ++k) yi[k] = xi[k] * s;
  });
}

// Max-subtracted; the sum of exponentials is taken in double, in element order.
void softmax(ThreadPool& pool, const Tensor& x, const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && out.dtype == DType::F32 && same_shape(x, out),
               "softmax: x, out must be F32 of one shape");
  const int64_t n = x.cols();
  const Rows<const float> xr(x);
  const Rows<float> outr(out);
  for_each_row(pool, x.rows(), n, [&](int64_t r) {
    const float* xi = xr[r];
    float* yi = outr[r];
    float max = -INFINITY;
    for (int64_t k = 0; k < n; ++k) max = std::fmax(max, xi[k]);
    if (max == -INFINITY) {  // everything masked: no distribution to speak of
      for (int64_t k = 0; k < n; ++k) yi[k] = 0.0f;
      return;
    }
    double sum = 0.0;
    for (int64_t k = 0; k < n; ++k) {
      yi[k] = std::exp(xi[k] - max);
      sum += yi[k];
    }
    const double inv = 1.0 / sum;
    for (int64_t k = 0; k < n; ++k) yi[k] = static_cast<float>(yi[k] * inv);
  });
}

}  // namespace sluice::backends::cpu
