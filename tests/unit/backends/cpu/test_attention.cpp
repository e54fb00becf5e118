// write_kv + paged attention against a naive double-precision attention over a
// contiguous copy of each sequence's keys and values: grouped-query heads,
// sliding window, softcap, F32 and F16 caches, prefill chunks and decode rows in
// one batch. Tolerance: 5e-6 absolute (q, k, v in [-1, 1]; outputs are convex
// combinations of v). F16 caches are compared with a reference that reads the
// same F16-rounded keys/values. Batch invariance: bit-identical rows alone vs in
// the batch and with 1 vs 2 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

#include "backends/cpu/half.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/thread_pool.h"
#include "cpu_test_util.h"

namespace sluice::backends::test::unit_backends_cpu_test_attention {
namespace {

constexpr int64_t kHeads = 4, kKvHeads = 2, kHeadDim = 32, kBlockSize = 4, kNumBlocks = 48;

struct SeqData {
  int32_t num_cached, num_queries;
  std::vector<int32_t> blocks;
  std::vector<float> k, v;  // [num_cached + num_queries, kv_heads, head_dim]
  std::vector<float> q;     // [num_queries, heads, head_dim]
};

struct Fixture {
  std::unique_ptr<Backend> backend;
  HostTensor kc, vc;
  std::vector<SeqData> seqs;

  Fixture(int threads, DType cache_dtype)
      : backend(make_cpu_backend(threads)),
        kc(*backend, cache_dtype, {kNumBlocks, kBlockSize, kKvHeads, kHeadDim}),
        vc(*backend, cache_dtype, {kNumBlocks, kBlockSize, kKvHeads, kHeadDim}) {}

  KvLayer cache() const { return {kc.tensor, vc.tensor}; }

  // Sequences with shuffled block tables; every token's K/V written via write_kv.
  void make_sequences(std::mt19937& rng, std::initializer_list<std::pair<int32_t, int32_t>> shapes) {
    std::vector<int32_t> free_blocks(kNumBlocks);
    std::iota(free_blocks.begin(), free_blocks.end(), 0);
    std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
    for (auto [cached, queries] : shapes) {
      SeqData s{cached, queries, {}, {}, {}, {}};
      const int32_t total = cached + queries;
      for (int32_t b = 0; b * kBlockSize < total; ++b) {
        s.blocks.push_back(free_blocks.back());
        free_blocks.pop_back();
      }
      s.k = random_floats(rng, size_t(total * kKvHeads * kHeadDim));
      s.v = random_floats(rng, size_t(total * kKvHeads * kHeadDim));
      s.q = random_floats(rng, size_t(queries * kHeads * kHeadDim));
      std::vector<int32_t> slots(static_cast<size_t>(total));
      for (int32_t p = 0; p < total; ++p) slots[size_t(p)] = s.blocks[size_t(p / kBlockSize)] * kBlockSize + p % kBlockSize;
      HostTensor kt(*backend, DType::F32, {total, kKvHeads, kHeadDim}), vt(*backend, DType::F32, {total, kKvHeads, kHeadDim});
      HostTensor st(*backend, DType::I32, {total});
      kt.set(*backend, s.k);
      vt.set(*backend, s.v);
      st.set(*backend, slots);
      backend->write_kv(kt.tensor, vt.tensor, cache(), st.tensor);
      seqs.push_back(std::move(s));
    }
  }

  // Runs attention over the sequences listed in `order`, packed in that order.
  std::vector<float> run(const std::vector<int>& order, const AttentionParams& params) {
    std::vector<SequenceSlice> slices;
    std::vector<float> q;
    int32_t row = 0;
    for (int i : order) {
      const SeqData& s = seqs[size_t(i)];
      slices.push_back({row, s.num_queries, s.num_cached, s.blocks});
      q.insert(q.end(), s.q.begin(), s.q.end());
      row += s.num_queries;
    }
    HostTensor qt(*backend, DType::F32, {row, kHeads, kHeadDim}), out(*backend, DType::F32, {row, kHeads, kHeadDim});
    qt.set(*backend, q);
    if (path) {
      cpu::ThreadPool pool(2);
      cpu::attention(pool, *path, qt.tensor, cache(), slices, params, out.tensor);
    } else {
      backend->attention(qt.tensor, cache(), slices, params, out.tensor);
    }
    return out.get(*backend);
  }
  std::optional<cpu::KernelPath> path;  // set: run that path's kernel instead of the backend's
};

double stored(float x, DType cache_dtype) {
  return cache_dtype == DType::F16 ? cpu::fp16_to_fp32(cpu::fp32_to_fp16(x)) : x;
}

// Naive attention for one sequence, contiguous K/V.
std::vector<double> reference(const SeqData& s, const AttentionParams& p, DType cache_dtype) {
  std::vector<double> out(s.q.size());
  const int64_t group = kHeads / kKvHeads;
  for (int32_t i = 0; i < s.num_queries; ++i) {
    const int64_t pos = s.num_cached + i;
    const int64_t lo = p.sliding_window > 0 ? std::max<int64_t>(0, pos - p.sliding_window + 1) : 0;
    for (int64_t h = 0; h < kHeads; ++h) {
      const int64_t kvh = h / group;
      std::vector<double> w;
      for (int64_t j = lo; j <= pos; ++j) {
        double dotp = 0;
        for (int64_t d = 0; d < kHeadDim; ++d)
          dotp += double(s.q[size_t((i * kHeads + h) * kHeadDim + d)]) *
                  stored(s.k[size_t((j * kKvHeads + kvh) * kHeadDim + d)], cache_dtype);
        double score = dotp * p.scale;
        if (p.softcap > 0) score = p.softcap * std::tanh(score / p.softcap);
        w.push_back(score);
      }
      const double max = *std::max_element(w.begin(), w.end());
      double sum = 0;
      for (double& x : w) sum += x = std::exp(x - max);
      for (int64_t d = 0; d < kHeadDim; ++d) {
        double acc = 0;
        for (int64_t j = lo; j <= pos; ++j)
          acc += w[size_t(j - lo)] * stored(s.v[size_t((j * kKvHeads + kvh) * kHeadDim + d)], cache_dtype);
        out[size_t((i * kHeads + h) * kHeadDim + d)] = acc / sum;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("attention: paged GQA attention matches a naive contiguous reference") {
  for (DType cache_dtype : {DType::F32, DType::F16}) {
    for (int32_t window : {0, 4}) {
      for (float softcap : {0.0f, 5.0f}) {
        CAPTURE(dtype_name(cache_dtype));
        CAPTURE(window);
        CAPTURE(softcap);
        std::mt19937 rng(31);
        Fixture f(2, cache_dtype);
        // A prefill chunk after a cached prefix, a fresh prefill, a decode row, a T=1 prefill,
        // and two that span several 16-key blocks and 16-row items.
        f.make_sequences(rng, {{5, 3}, {0, 7}, {12, 1}, {0, 1}, {20, 20}, {0, 37}});
        AttentionParams p;
        p.scale = 1.0f / std::sqrt(float(kHeadDim)) * 3.0f;  // sharper softmax than usual
        p.sliding_window = window;
        p.softcap = softcap;
        const std::vector<float> got = f.run({0, 1, 2, 3, 4, 5}, p);
        size_t offset = 0;
        int failures = 0;
        for (const SeqData& s : f.seqs) {
          const std::vector<double> ref = reference(s, p, cache_dtype);
          for (size_t i = 0; i < ref.size(); ++i)
            if (std::fabs(got[offset + i] - ref[i]) > 5e-6 && failures++ < 3) {
              INFO("element " << i << " of a sequence with " << s.num_cached << " cached");
              CHECK(got[offset + i] == doctest::Approx(ref[i]).epsilon(0).scale(0));
            }
          offset += ref.size();
        }
        CHECK(failures == 0);
      }
    }
  }
}

TEST_CASE("attention: batch invariance across batch composition and thread count") {
  for (DType cache_dtype : {DType::F32, DType::F16}) {
    CAPTURE(dtype_name(cache_dtype));
    std::mt19937 rng(32);
    Fixture one(1, cache_dtype), two(2, cache_dtype);
    std::mt19937 rng2 = rng;
    one.make_sequences(rng, {{5, 3}, {0, 9}, {13, 1}, {2, 2}});
    two.make_sequences(rng2, {{5, 3}, {0, 9}, {13, 1}, {2, 2}});
    AttentionParams p;
    p.scale = 0.2f;
    p.sliding_window = 6;
    const std::vector<float> batch = two.run({0, 1, 2, 3}, p);
    CHECK(bits_equal(one.run({0, 1, 2, 3}, p), batch));
    const size_t row = size_t(kHeads * kHeadDim);
    // Sequence 2 (one decode row) sits after 12 query rows in the batch.
    CHECK(bits_equal(one.run({2}, p), std::vector<float>(batch.begin() + 12 * row, batch.begin() + 13 * row)));
    CHECK(bits_equal(two.run({2}, p), std::vector<float>(batch.begin() + 12 * row, batch.begin() + 13 * row)));
    // Sequence 1 alone and behind the others.
    const std::vector<float> reordered = two.run({3, 2, 1, 0}, p);
    CHECK(bits_equal(std::vector<float>(reordered.begin() + 3 * row, reordered.begin() + 12 * row),
                     std::vector<float>(batch.begin() + 3 * row, batch.begin() + 12 * row)));
  }
}

TEST_CASE("attention: every kernel path equals the scalar path bit for bit") {
  for (DType cache_dtype : {DType::F32, DType::F16}) {
    for (int32_t window : {0, 7}) {
      CAPTURE(dtype_name(cache_dtype));
      CAPTURE(window);
      std::mt19937 rng(34);
      Fixture f(2, cache_dtype);
      f.make_sequences(rng, {{20, 20}, {0, 37}, {30, 1}, {3, 2}});
      AttentionParams p;
      p.scale = 0.3f;
      p.sliding_window = window;
      p.softcap = window ? 5.0f : 0.0f;
      f.path = cpu::KernelPath::scalar;
      const std::vector<float> scalar = f.run({0, 1, 2, 3}, p);
      for (cpu::KernelPath path : cpu::runnable_kernel_paths()) {
        CAPTURE(cpu::kernel_path_name(path));
        f.path = path;
        CHECK(bits_equal(f.run({0, 1, 2, 3}, p), scalar));
      }
    }
  }
}

TEST_CASE("write_kv: rows land at their slots, F16 rounded to nearest even") {
  auto backend = make_cpu_backend(2);
  std::mt19937 rng(33);
  for (DType cache_dtype : {DType::F32, DType::F16}) {
    CAPTURE(dtype_name(cache_dtype));
    HostTensor kc(*backend, cache_dtype, {3, 4, 2, 8}), vc(*backend, cache_dtype, {3, 4, 2, 8});
    const std::vector<int32_t> slots = {11, 0, 5};
    const auto k = random_floats(rng, 3 * 2 * 8), v = random_floats(rng, 3 * 2 * 8);
    HostTensor kt(*backend, DType::F32, {3, 2, 8}), vt(*backend, DType::F32, {3, 2, 8}), st(*backend, DType::I32, {3});
    kt.set(*backend, k);
    vt.set(*backend, v);
    st.set(*backend, slots);
    backend->write_kv(kt.tensor, vt.tensor, {kc.tensor, vc.tensor}, st.tensor);
    for (int which = 0; which < 2; ++which) {
      const auto& src = which == 0 ? k : v;
      const HostTensor& cache = which == 0 ? kc : vc;
      std::vector<float> cached;
      if (cache_dtype == DType::F32) {
        cached = cache.get(*backend);
      } else {
        for (uint16_t h : cache.get<uint16_t>(*backend)) cached.push_back(cpu::fp16_to_fp32(h));
      }
      for (size_t t = 0; t < slots.size(); ++t)
        for (size_t e = 0; e < 16; ++e)
          CHECK(cached[size_t(slots[t]) * 16 + e] == float(stored(src[t * 16 + e], cache_dtype)));
      CHECK(cached[16] == 0.0f);  // slot 1 untouched
    }
  }
}

}  // namespace sluice::backends::test
