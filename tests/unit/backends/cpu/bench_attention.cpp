// Speed of the CPU attention kernel on every path this CPU runs, one thread: one
// sequence with 512 cached tokens, SmolLM2's heads (9 query heads over 3 KV heads
// of 64), a decode row and a 16-row prefill chunk, F16 and F32 caches. Prints
// nanoseconds per (query head, key). A benchmark, not a test: skipped unless asked for,
//   ./build/tests/sluice_unit_tests -tc='attention bench*' --no-skip
#include <doctest/doctest.h>

#include <chrono>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cpu/quant/cpu_features.h"
#include "backends/cpu/thread_pool.h"
#include "tests/unit/backends/cpu/cpu_test_util.h"

namespace sluice::backends::test::unit_backends_cpu_bench_attention {

TEST_CASE("attention bench: ns per (query head, key) on every kernel path" * doctest::skip()) {
  auto backend = make_cpu_backend(1);
  constexpr int64_t kBlocks = 40, kBlockSize = 16, kKvHeads = 3, kHeadDim = 64, kHeads = 9, kCached = 512;
  for (DType dtype : {DType::F16, DType::F32}) {
    HostTensor k(*backend, dtype, {kBlocks, kBlockSize, kKvHeads, kHeadDim});
    HostTensor v(*backend, dtype, {kBlocks, kBlockSize, kKvHeads, kHeadDim});
    std::mt19937 rng(3);
    const size_t cache_floats = size_t(kBlocks * kBlockSize * kKvHeads * kHeadDim);
    HostTensor k32(*backend, DType::F32, {kBlocks * kBlockSize, kKvHeads, kHeadDim});
    HostTensor v32(*backend, DType::F32, {kBlocks * kBlockSize, kKvHeads, kHeadDim});
    HostTensor slots(*backend, DType::I32, {kBlocks * kBlockSize});
    k32.set(*backend, random_floats(rng, cache_floats));
    v32.set(*backend, random_floats(rng, cache_floats));
    std::vector<int32_t> slot_ids(size_t(kBlocks * kBlockSize));
    for (size_t i = 0; i < slot_ids.size(); ++i) slot_ids[i] = static_cast<int32_t>(i);
    slots.set(*backend, slot_ids);
    backend->write_kv(k32.tensor, v32.tensor, {k.tensor, v.tensor}, slots.tensor);
    for (int32_t queries : {1, 16}) {
      SequenceSlice seq{0, queries, kCached, {}};
      for (int32_t b = 0; b * kBlockSize < kCached + queries; ++b) seq.block_table.push_back(b);
      const std::vector<SequenceSlice> slices{seq};
      HostTensor q(*backend, DType::F32, {queries, kHeads, kHeadDim}), out(*backend, DType::F32, {queries, kHeads, kHeadDim});
      q.set(*backend, random_floats(rng, size_t(queries * kHeads * kHeadDim)));
      AttentionParams params;
      params.scale = 0.125f;
      for (cpu::KernelPath path : cpu::runnable_kernel_paths()) {
        cpu::ThreadPool pool(1);
        constexpr int kCalls = 200;
        cpu::attention(pool, path, q.tensor, {k.tensor, v.tensor}, slices, params, out.tensor);  // warm up
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kCalls; ++i) cpu::attention(pool, path, q.tensor, {k.tensor, v.tensor}, slices, params, out.tensor);
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() / kCalls;
        MESSAGE((dtype == DType::F16 ? "f16" : "f32") << " cache, " << queries << " query row(s), path "
                << cpu::kernel_path_name(path) << ": " << ns / (queries * kHeads * kCached) << " ns per (query head, key)");
      }
    }
  }
}

}  // namespace sluice::backends::test
