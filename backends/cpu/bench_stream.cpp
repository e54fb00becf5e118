// The weight-streaming half of sluice_bench_ops: one row through a stack of
// distinct weight matrices at a decoder's shapes (the Qwen3-TTS 0.6B talker:
// 28 layers of hidden 1024, q 2048, kv 1024, MLP 3072), as a decode step reads
// them, with nothing else in between; then its code predictor's 5 such layers 15
// times over, as a frame's sub-steps read them. What a frame costs beyond these is
// everything but the matmuls.
#include <cstdio>
#include <iterator>
#include <memory>
#include <random>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/bench_ops.h"

namespace sluice::backends::bench {
namespace {

struct Matrix {
  std::vector<std::byte> bytes;
  std::unique_ptr<Buffer> buffer;
  Tensor tensor;
};

}  // namespace

void bench_weight_stream(Backend& backend) {
  constexpr int64_t kLayers = 28, kPredictorLayers = 5, kHidden = 1024, kQ = 2048, kKv = 1024, kMlp = 3072;
  const struct { int64_t in, out; } shapes[] = {{kHidden, kQ},   {kHidden, kKv}, {kHidden, kKv}, {kQ, kHidden},
                                                {kHidden, kMlp}, {kHidden, kMlp}, {kMlp, kHidden}};
  std::mt19937 rng(7);
  auto x_buf = backend.allocate(kMlp * 4);
  auto y_buf = backend.allocate(kMlp * 4);
  std::printf("%-6s %-34s %10s %10s %8s\n", "dtype", "one row through", "ms/pass", "MB/pass", "GB/s");
  for (DType dtype : {DType::Q4_0, DType::Q8_0, DType::F16}) {
    std::vector<Matrix> matrices;
    uint64_t total = 0;
    for (int64_t l = 0; l < kLayers; ++l) {
      for (const auto& s : shapes) {
        Matrix m;
        m.bytes.resize(*dtype_bytes(dtype, static_cast<uint64_t>(s.in * s.out)));
        // Every byte small: for the block formats a scale of at most a few units (F16
        // halves whose exponent bits are low), for F16 a small value alike.
        for (size_t i = 0; i < m.bytes.size(); ++i) m.bytes[i] = static_cast<std::byte>((rng() & 0x3F) | ((i & 1) ? 0 : 0x80));
        m.buffer = backend.wrap_matrix(m.bytes, dtype, s.out, s.in);
        m.tensor = Tensor::make(m.buffer.get(), 0, dtype, {s.out, s.in});
        total += m.bytes.size();
        matrices.push_back(std::move(m));
      }
    }
    auto pass = [&](int64_t layers) {
      for (size_t i = 0; i < static_cast<size_t>(layers) * std::size(shapes); ++i) {
        const Tensor& w = matrices[i].tensor;
        backend.matmul(Tensor::make(x_buf.get(), 0, DType::F32, {1, w.dim(1)}), w,
                       Tensor::make(y_buf.get(), 0, DType::F32, {1, w.dim(0)}));
      }
    };
    const double talker = seconds_per_call([&] { pass(kLayers); });
    std::printf("%-6s %-34s %10.2f %10.1f %8.1f\n", std::string(dtype_name(dtype)).c_str(),
                "28 talker layers (7 matmuls each)", talker * 1e3, static_cast<double>(total) * 1e-6,
                static_cast<double>(total) / talker * 1e-9);
    // The code predictor: 5 such layers, read 15 times a frame (one per sub-step), so
    // after the first they come from the last-level cache.
    const double predictor = seconds_per_call([&] {
      for (int sub_step = 0; sub_step < 15; ++sub_step) pass(kPredictorLayers);
    });
    const double predictor_bytes = 15.0 * static_cast<double>(total) * kPredictorLayers / kLayers;
    std::printf("%-6s %-34s %10.2f %10.1f %8.1f\n", std::string(dtype_name(dtype)).c_str(),
                "5 predictor layers, 15 times", predictor * 1e3, predictor_bytes * 1e-6,
                predictor_bytes / predictor * 1e-9);
  }
}

}  // namespace sluice::backends::bench
