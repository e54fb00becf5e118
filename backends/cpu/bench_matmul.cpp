// sluice_bench_ops: matmul throughput of the CPU backend per weight dtype.
// Prints GFLOP/s (2 * T * in * out per call) and the weight bytes streamed per
// second, the number that bounds decode (T = 1). Not a test: numbers only.
// `signal` runs the codec decoder's convolutions instead (bench_signal.cpp).
// `stream` runs one row through a decoder's worth of distinct weights (bench_stream.cpp).
//   usage: sluice_bench_ops [num_threads] [matmul|signal|stream]
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/bench_ops.h"
#include "backends/cpu/half.h"

using namespace sluice::backends;

namespace {

// Plausible bytes for every format: random payload, small finite F16 scales.
std::vector<std::byte> random_weights(DType dtype, int64_t rows, int64_t cols, std::mt19937& rng) {
  const auto& traits = dtype_traits(dtype);
  const size_t bytes = *dtype_bytes(dtype, static_cast<uint64_t>(rows * cols));
  std::vector<std::byte> data(bytes);
  for (auto& b : data) b = static_cast<std::byte>(rng() & 0xFF);
  if (dtype == DType::F32) {
    auto* f = reinterpret_cast<float*>(data.data());
    for (int64_t i = 0; i < rows * cols; ++i) f[i] = 0.01f * static_cast<float>(rng() % 200) - 1.0f;
  } else if (dtype == DType::F16 || dtype == DType::BF16 || traits.block_size > 1) {
    // Overwrite every 16-bit word's exponent bits with something tame: simplest is to
    // regenerate halves from small floats.
    auto* h = reinterpret_cast<uint16_t*>(data.data());
    for (size_t i = 0; i < bytes / 2; ++i)
      h[i] = dtype == DType::BF16 ? sluice::backends::cpu::fp32_to_bf16(0.01f * static_cast<float>(rng() % 200) - 1.0f)
                                  : sluice::backends::cpu::fp32_to_fp16(0.01f * static_cast<float>(rng() % 200) - 1.0f);
  }
  return data;
}

}  // namespace

int main(int argc, char** argv) {
  const int num_threads = argc > 1 ? std::atoi(argv[1]) : 0;
  auto backend = make_cpu_backend(num_threads);
  if (argc > 2 && std::string_view(argv[2]) == "signal") {
    bench::bench_signal_ops(*backend);
    return 0;
  }
  if (argc > 2 && std::string_view(argv[2]) == "stream") {
    bench::bench_weight_stream(*backend);
    return 0;
  }
  std::mt19937 rng(42);
  struct Shape { int64_t t, in, out; };
  // SmolLM2-135M (576 / 1536 / vocab 49152) and Gemma 3 270M (1024 / 2048) shapes.
  const Shape shapes[] = {{1, 576, 1536},  {1, 1536, 576},   {1, 576, 49152},
                          {1, 1024, 2048}, {16, 576, 1536},  {128, 576, 1536}, {128, 1024, 2048}};
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1,
                          DType::Q5_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};
  std::printf("%-6s %-18s %10s %10s %10s\n", "dtype", "[T,in]x[out,in]", "ms/call", "GFLOP/s", "GB/s(w)");
  for (const Shape& s : shapes) {
    for (DType dtype : dtypes) {
      if (s.in % dtype_traits(dtype).block_size != 0) continue;  // k-quants need in % 256 == 0
      std::vector<std::byte> w_bytes = random_weights(dtype, s.out, s.in, rng);
      // wrap_matrix, as the loaders do: the CPU keeps its repacked layout once, not per call.
      auto w_buf = backend->wrap_matrix(w_bytes, dtype, s.out, s.in);
      auto x_buf = backend->allocate(static_cast<size_t>(s.t * s.in) * 4);
      auto y_buf = backend->allocate(static_cast<size_t>(s.t * s.out) * 4);
      Tensor w = Tensor::make(w_buf.get(), 0, dtype, {s.out, s.in});
      Tensor x = Tensor::make(x_buf.get(), 0, DType::F32, {s.t, s.in});
      Tensor y = Tensor::make(y_buf.get(), 0, DType::F32, {s.t, s.out});
      const double per_call = bench::seconds_per_call([&] { backend->matmul(x, w, y); });
      const double flops = 2.0 * static_cast<double>(s.t * s.in * s.out);
      char shape[32];
      std::snprintf(shape, sizeof shape, "[%lld,%lld]x[%lld]", static_cast<long long>(s.t),
                    static_cast<long long>(s.in), static_cast<long long>(s.out));
      std::printf("%-6s %-18s %10.3f %10.2f %10.2f\n", std::string(dtype_name(dtype)).c_str(), shape,
                  per_call * 1e3, flops / per_call * 1e-9, static_cast<double>(w_bytes.size()) / per_call * 1e-9);
    }
  }
  return 0;
}
