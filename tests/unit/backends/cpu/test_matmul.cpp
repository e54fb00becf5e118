// matmul for every weight dtype against dequantize_row + a double-precision dot,
// and batch invariance: a row's result is bit-identical alone, inside a batch of
// 16, and with 1 or 2 compute threads.
// Tolerance: |y - ref| <= (in/16 + 6) * 2^-24 * sum_k |w_k x_k| (the F32 rounding
// bound of the fixed 16-lane summation; weights are dequantized exactly).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/float_matmul_kernel.h"
#include "backends/cpu/quant/cpu_features.h"
#include "backends/cpu/quant/packed_matrix.h"
#include "backends/cpu/thread_pool.h"
#include "backends/cpu/half.h"
#include "cpu_test_util.h"

namespace sluice::backends::test::unit_backends_cpu_test_matmul {
namespace {

constexpr DType kWeightTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                                  DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K};

struct MatmulCase {
  std::unique_ptr<Backend> backend;
  std::vector<std::byte> w_bytes;
  std::unique_ptr<Buffer> w_buffer;
  Tensor w;
};

std::vector<float> run_matmul(Backend& backend, const Tensor& w, const std::vector<float>& x, int64_t t) {
  const int64_t in = w.cols(), out = w.dim(0);
  HostTensor xt(backend, DType::F32, {t, in});
  HostTensor yt(backend, DType::F32, {t, out});
  xt.set(backend, x);
  backend.matmul(xt.tensor, w, yt.tensor);
  return yt.get(backend);
}

}  // namespace

TEST_CASE("matmul: every weight dtype matches dequantize_row + a double dot") {
  auto backend = make_cpu_backend(2);
  cpu::ThreadPool pool(2);
  std::mt19937 rng(7);
  struct Shape { int64_t t, in, out; };
  for (DType dtype : kWeightTypes) {
    const bool is_float = dtype_traits(dtype).block_size == 1;
    std::vector<Shape> shapes = {{1, 256, 37}, {37, 512, 19}, {16, 256, 70}};
    if (is_float) shapes.push_back({5, 100, 33}), shapes.push_back({37, 7, 3});
    for (const Shape& s : shapes) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(s.t);
      CAPTURE(s.in);
      CAPTURE(s.out);
      std::vector<std::byte> w_bytes = random_weights(dtype, s.out, s.in, rng);
      auto w_buffer = backend->wrap_weights(w_bytes);
      const Tensor w = Tensor::make(w_buffer.get(), 0, dtype, {s.out, s.in});
      const std::vector<float> x = random_floats(rng, static_cast<size_t>(s.t * s.in));
      const std::vector<float> y = run_matmul(*backend, w, x, s.t);

      std::vector<float> w_row(static_cast<size_t>(s.in));
      const size_t row_bytes = w.row_bytes();
      std::unique_ptr<cpu::PackedMatrix> packed;
      if (cpu::packed_format(dtype))
        packed = std::make_unique<cpu::PackedMatrix>(pool, dtype, w_bytes.data(), row_bytes, s.out, s.in);
      int failures = 0;
      for (int64_t o = 0; o < s.out; ++o) {
        cpu::dequantize_row(dtype, w_bytes.data() + static_cast<size_t>(o) * row_bytes, w_row.data(), s.in);
        for (int64_t t = 0; t < s.t; ++t) {
          double ref = 0.0, sum_abs = 0.0, quant_error = 0.0, packed_abs = 0.0;
          for (int64_t k = 0; k < s.in; ++k) {
            const double wk = w_row[static_cast<size_t>(k)], xk = x[static_cast<size_t>(t * s.in + k)];
            ref += wk * xk;
            sum_abs += std::fabs(wk * xk);
            if (!packed) continue;
            double amax = 0.0;
            for (int64_t j = k / 32 * 32; j < k / 32 * 32 + 32; ++j)
              amax = std::max(amax, std::fabs(static_cast<double>(x[static_cast<size_t>(t * s.in + j)])));
            const cpu::PackedValues v = packed->values(o, k / 32);
            const int h = packed->format().split16 && k % 32 >= 16 ? 1 : 0;
            const double w_packed = static_cast<double>(v.a[h]) * v.u[k % 32] + v.b[h];
            quant_error += std::fabs(wk) * amax / 127.0 / 2.0 * (1.0 + 1e-6) + std::fabs(xk) * std::fabs(w_packed - wk);
            packed_abs += std::fabs(w_packed) * (std::fabs(xk) + amax / 254.0);
          }
          const double bound = dot_error_bound(s.in, sum_abs) + quant_error +
                               (4.0 * static_cast<double>(s.in / 32) + 8.0) * std::ldexp(1.0, -24) * packed_abs;
          const double got = y[static_cast<size_t>(t * s.out + o)];
          if (std::fabs(got - ref) > bound && failures++ < 3) {
            INFO("t=" << t << " o=" << o << " got " << got << " ref " << ref);
            CHECK(std::fabs(got - ref) <= bound);
          }
        }
      }
      CHECK(failures == 0);
    }
  }
}

TEST_CASE("matmul: batch invariance across batch size and thread count") {
  auto one = make_cpu_backend(1);
  auto two = make_cpu_backend(2);
  std::mt19937 rng(11);
  const int64_t t = 16, in = 512, out = 45;
  for (DType dtype : kWeightTypes) {
    CAPTURE(dtype_name(dtype));
    std::vector<std::byte> w_bytes = random_weights(dtype, out, in, rng);
    auto w_buffer = one->wrap_weights(w_bytes);
    const Tensor w = Tensor::make(w_buffer.get(), 0, dtype, {out, in});
    const std::vector<float> x = random_floats(rng, static_cast<size_t>(t * in));
    const std::vector<float> batch1 = run_matmul(*one, w, x, t);
    const std::vector<float> batch2 = run_matmul(*two, w, x, t);
    CHECK(bits_equal(batch1, batch2));
    for (int64_t row = 0; row < t; ++row) {
      const std::vector<float> x_row(x.begin() + row * in, x.begin() + (row + 1) * in);
      const std::vector<float> batch_row(batch1.begin() + row * out, batch1.begin() + (row + 1) * out);
      CHECK(bits_equal(run_matmul(*one, w, x_row, 1), batch_row));
      CHECK(bits_equal(run_matmul(*two, w, x_row, 1), batch_row));
    }
    // A 3-row batch starting at an odd row (the remainder path of the 4-row tile).
    const std::vector<float> x3(x.begin() + 5 * in, x.begin() + 8 * in);
    const std::vector<float> y3(batch1.begin() + 5 * out, batch1.begin() + 8 * out);
    CHECK(bits_equal(run_matmul(*two, w, x3, 3), y3));
  }
}

TEST_CASE("matmul: large T spans several row tiles and stays invariant") {
  auto backend = make_cpu_backend(2);
  std::mt19937 rng(12);
  const int64_t t = 150, in = 256, out = 40;
  std::vector<std::byte> w_bytes = random_weights(DType::Q4_K, out, in, rng);
  auto w_buffer = backend->wrap_weights(w_bytes);
  const Tensor w = Tensor::make(w_buffer.get(), 0, DType::Q4_K, {out, in});
  const std::vector<float> x = random_floats(rng, static_cast<size_t>(t * in));
  const std::vector<float> y = run_matmul(*backend, w, x, t);
  for (int64_t row : {0, 63, 64, 127, 149}) {
    const std::vector<float> x_row(x.begin() + row * in, x.begin() + (row + 1) * in);
    const std::vector<float> y_row(y.begin() + row * out, y.begin() + (row + 1) * out);
    CHECK(bits_equal(run_matmul(*backend, w, x_row, 1), y_row));
  }
}

TEST_CASE("matmul: the F32/F16/BF16 tile of every ISA path equals the scalar path bit for bit") {
  // Each path widens weights with its own instructions (F16C, AVX-512) and
  // vectorizes dot.h's loop to its own width: the results must still be the
  // scalar path's, on rows with tails and tiles of every remainder.
  std::mt19937 rng(13);
  const std::vector<cpu::KernelPath> paths = cpu::runnable_kernel_paths();
  MESSAGE("float matmul paths checked against scalar: " << paths.size() - 1);
  const cpu::FloatMatmulTile reference = cpu::float_matmul_tile(cpu::KernelPath::scalar);
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    // 19, 23 and 31 weight rows: blocks of 6 (AVX-512), 4 and single rows; in decode
    // (fewer than 4 tokens) AVX-512's blocks of 16, 8, 4, 2 and 1 rows read as stored.
    for (const auto& [in, out] : {std::pair<int64_t, int64_t>{7, 19}, {100, 23}, {300, 19}, {576, 23}, {64, 31}}) {
      std::vector<std::byte> w_bytes = random_weights(dtype, out, in, rng);
      for (int64_t t : {1, 3, 8, 17, 64}) {
        CAPTURE(dtype_name(dtype));
        CAPTURE(in);
        CAPTURE(out);
        CAPTURE(t);
        const std::vector<float> x = random_floats(rng, static_cast<size_t>(t * in));
        const int64_t row_bytes = in * static_cast<int64_t>(dtype_traits(dtype).block_bytes);
        auto run = [&](cpu::FloatMatmulTile tile) {
          std::vector<float> y(static_cast<size_t>(t * out), -1.0f);
          std::vector<float> scratch(static_cast<size_t>(cpu::kFloatScratchRows * in));
          const cpu::FloatMatmulArgs args{.x = x.data(), .x_stride = in, .w = w_bytes.data(), .w_stride = row_bytes,
                                          .w_dtype = dtype, .y = y.data(), .y_stride = out, .n = in};
          tile(args, 0, t, 0, out, scratch.data());
          return y;
        };
        const std::vector<float> want = run(reference);
        for (cpu::KernelPath path : paths) {
          CAPTURE(cpu::kernel_path_name(path));
          CHECK(bits_equal(run(cpu::float_matmul_tile(path)), want));
        }
      }
    }
  }
}

TEST_CASE("matmul: supports_matmul names exactly the dequantizable dtypes") {
  auto backend = make_cpu_backend(1);
  for (DType dtype : kWeightTypes) CHECK(backend->supports_matmul(dtype));
  CHECK_FALSE(backend->supports_matmul(DType::Q2_K));
  CHECK_FALSE(backend->supports_matmul(DType::IQ4_NL));
  CHECK_FALSE(backend->supports_matmul(DType::I32));
}

}  // namespace sluice::backends::test
