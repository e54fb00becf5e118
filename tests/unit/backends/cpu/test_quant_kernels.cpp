// The integer matmul path (backends/cpu/quant/): repacking, activation
// quantization, and every kernel path this CPU runs against the scalar reference.
//
//   - Packing: a * u + b from the packed layout equals GGML's dequantized value
//     exactly for Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 (F16 scales are kept, and d * u + b
//     is exact in F32 for these value ranges); the k-quants' F16-rounded sub-block
//     scale and min may move a value by at most 2^-11 (|a u| + |b|).
//   - Quantized activations: |x - d q| <= d / 2 with d = max|x| / 127 per block, and
//     s, s_lo, s_hi are d times the sums of q.
//   - Kernels: the scalar path's result is within the F32 rounding of its epilogue
//     (two fma per block and half: (4 * blocks + 8) * 2^-24 of the sum of |terms|)
//     of the exact sum Σ a d Σuq + b s computed in double; every SIMD path equals
//     the scalar one bit for bit, for every format and for T = 1, 3, 8, 17, 64, 512
//     and row counts that leave a partial group.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/quant/act_quantize.h"
#include "backends/cpu/quant/packed_matrix.h"
#include "backends/cpu/quant/quant_kernels.h"
#include "backends/cpu/quant/quant_matmul.h"
#include "backends/cpu/thread_pool.h"
#include "cpu_test_util.h"

namespace sluice::backends::test::unit_backends_cpu_test_quant_kernels {
namespace {

using cpu::ActBlock;
using cpu::KernelPath;
using cpu::PackedMatrix;

constexpr DType kPackedTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0,
                                  DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K};

bool is_k_quant(DType dtype) { return dtype == DType::Q4_K || dtype == DType::Q5_K || dtype == DType::Q6_K; }

std::vector<ActBlock> quantize(const std::vector<float>& x, int64_t t, int64_t in) {
  std::vector<ActBlock> out(static_cast<size_t>(t * in / 32));
  cpu::quantize_rows_portable(x.data(), in, t, in / 32, out.data());
  return out;
}

// y [T, rows] through one path's kernels, driven by QuantMatmul on `threads` threads.
std::vector<float> run_path(KernelPath path, int threads, const PackedMatrix& w, const std::vector<float>& x,
                            int64_t t) {
  auto backend = make_cpu_backend(1);  // only for its host buffers
  HostTensor xt(*backend, DType::F32, {t, w.cols()});
  HostTensor yt(*backend, DType::F32, {t, w.rows()});
  xt.set(*backend, x);
  cpu::ThreadPool pool(threads);
  cpu::QuantMatmul matmul(path);
  const PackedMatrix* ws[] = {&w};
  matmul.run(pool, xt.tensor, ws, {&yt.tensor, 1});
  return yt.get(*backend);
}

}  // namespace

TEST_CASE("quant: packed values reproduce GGML's dequantized weights") {
  std::mt19937 rng(21);
  cpu::ThreadPool pool(2);
  for (DType dtype : kPackedTypes) {
    CAPTURE(dtype_name(dtype));
    const int64_t rows = 37, cols = 512;
    const std::vector<std::byte> bytes = random_weights(dtype, rows, cols, rng);
    const size_t row_bytes = bytes.size() / rows;
    const PackedMatrix packed(pool, dtype, bytes.data(), row_bytes, rows, cols);
    CHECK(packed.num_groups() == 3);
    std::vector<float> w(static_cast<size_t>(cols));
    int failures = 0;
    for (int64_t r = 0; r < rows; ++r) {
      cpu::dequantize_row(dtype, bytes.data() + r * row_bytes, w.data(), cols);
      for (int64_t k = 0; k < cols / 32; ++k) {
        const cpu::PackedValues v = packed.values(r, k);
        for (int e = 0; e < 32; ++e) {
          const int h = packed.format().split16 && e >= 16 ? 1 : 0;
          const double ours = static_cast<double>(v.a[h]) * v.u[e] + v.b[h];
          const double ggml = w[static_cast<size_t>(k * 32 + e)];
          const double allowed =
              is_k_quant(dtype) ? std::ldexp(1.0, -11) * (std::fabs(v.a[h] * v.u[e]) + std::fabs(v.b[h])) : 0.0;
          if (std::fabs(ours - ggml) > allowed && failures++ < 3) CHECK(std::fabs(ours - ggml) <= allowed);
        }
      }
    }
    CHECK(failures == 0);
  }
}

TEST_CASE("quant: activation blocks round each value to the nearest step") {
  std::mt19937 rng(22);
  std::vector<float> x = random_floats(rng, 32 * 64, -3.0f, 3.0f);
  for (int i = 0; i < 32; ++i) x[static_cast<size_t>(32 + i)] = 0.0f;  // an all-zero block
  x[70] = 1e-30f;                                                      // a tiny maximum
  const std::vector<ActBlock> blocks = quantize(x, 1, static_cast<int64_t>(x.size()));
  for (size_t k = 0; k < blocks.size(); ++k) {
    const ActBlock& b = blocks[k];
    float amax = 0.0f;
    int lo = 0, hi = 0;
    for (int i = 0; i < 32; ++i) {
      amax = std::fmax(amax, std::fabs(x[k * 32 + static_cast<size_t>(i)]));
      (i < 16 ? lo : hi) += b.q[i];
    }
    CHECK(b.d == amax / 127.0f);
    for (int i = 0; i < 32; ++i)
      CHECK(std::fabs(x[k * 32 + static_cast<size_t>(i)] - b.d * b.q[i]) <= b.d * 0.5f * (1.0f + 1e-6f));
    CHECK(b.s == b.d * static_cast<float>(lo + hi));
    CHECK(b.s_lo == b.d * static_cast<float>(lo));
    CHECK(b.s_hi == b.d * static_cast<float>(hi));
  }
  CHECK(blocks[1].d == 0.0f);
}

TEST_CASE("quant: the scalar kernel computes the exact integer dot within its epilogue rounding") {
  std::mt19937 rng(23);
  cpu::ThreadPool pool(1);
  for (DType dtype : kPackedTypes) {
    CAPTURE(dtype_name(dtype));
    const int64_t rows = 21, cols = is_k_quant(dtype) ? 768 : 608, t = 5;
    const std::vector<std::byte> bytes = random_weights(dtype, rows, cols, rng);
    const PackedMatrix w(pool, dtype, bytes.data(), bytes.size() / rows, rows, cols);
    const std::vector<float> x = random_floats(rng, static_cast<size_t>(t * cols));
    const std::vector<ActBlock> act = quantize(x, t, cols);
    const std::vector<float> y = run_path(KernelPath::scalar, 1, w, x, t);
    const int64_t nb = cols / 32;
    for (int64_t i = 0; i < t; ++i)
      for (int64_t r = 0; r < rows; ++r) {
        double exact = 0.0, magnitude = 0.0;
        for (int64_t k = 0; k < nb; ++k) {
          const cpu::PackedValues v = w.values(r, k);
          const ActBlock& xb = act[static_cast<size_t>(i * nb + k)];
          long sum[2] = {0, 0};
          for (int e = 0; e < 32; ++e) sum[e / 16] += static_cast<long>(v.u[e]) * xb.q[e];
          const bool split = w.format().split16;
          const double terms[] = {
              static_cast<double>(v.a[0]) * xb.d * static_cast<double>(split ? sum[0] : sum[0] + sum[1]),
              static_cast<double>(v.b[0]) * (split ? xb.s_lo : xb.s),
              split ? static_cast<double>(v.a[1]) * xb.d * static_cast<double>(sum[1]) : 0.0,
              split ? static_cast<double>(v.b[1]) * xb.s_hi : 0.0};
          for (double term : terms) exact += term, magnitude += std::fabs(term);
        }
        const double got = y[static_cast<size_t>(i * rows + r)];
        const double bound = (4.0 * static_cast<double>(nb) + 8.0) * std::ldexp(1.0, -24) * magnitude + 1e-30;
        CHECK(std::fabs(got - exact) <= bound);
      }
  }
}

TEST_CASE("quant: every kernel path equals the scalar path bit for bit") {
  const std::vector<KernelPath> paths = cpu::runnable_kernel_paths();
  MESSAGE("kernel paths on this CPU: " << paths.size() << " (active: "
                                       << cpu::kernel_path_name(cpu::active_kernel_path()) << ")");
  if (paths.size() == 1) {
    MESSAGE("kernel path comparison skipped: only the scalar path runs on this CPU");
    return;
  }
  std::mt19937 rng(24);
  cpu::ThreadPool pool(2);
  struct Shape { int64_t rows, cols; };
  for (DType dtype : kPackedTypes) {
    const Shape shapes[] = {{37, is_k_quant(dtype) ? 256 : 96}, {16, is_k_quant(dtype) ? 768 : 576}};
    for (const Shape& s : shapes) {
      const std::vector<std::byte> bytes = random_weights(dtype, s.rows, s.cols, rng);
      const PackedMatrix w(pool, dtype, bytes.data(), bytes.size() / s.rows, s.rows, s.cols);
      for (int64_t t : {1, 3, 8, 17, 64, 512}) {
        const std::vector<float> x = random_floats(rng, static_cast<size_t>(t * s.cols), -2.0f, 2.0f);
        const std::vector<float> ref = run_path(KernelPath::scalar, 1, w, x, t);
        for (KernelPath path : paths) {
          CAPTURE(dtype_name(dtype));
          CAPTURE(cpu::kernel_path_name(path));
          CAPTURE(s.rows);
          CAPTURE(s.cols);
          CAPTURE(t);
          CHECK(bits_equal(run_path(path, 2, w, x, t), ref));
        }
      }
    }
  }
}

}  // namespace sluice::backends::test
