// The Backend defaults (backends/backend.cpp) on the CPU backend, which overrides
// none of them: every fused op equals the composition of the plain ops bit for bit
// (same kernels, same order), write_kv skips negative slots, copy copies contiguous
// and strided rows, and the step hooks record nothing and run the ops every time.
// Tolerance: none, every comparison is bit-exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/unit/backends/backend_test_util.h"

namespace sluice::backends::test::unit_backends_test_fused_defaults {
namespace {

std::vector<float> with_nan_rows(std::vector<float> v, int64_t row_elems, const std::vector<int32_t>& slots) {
  for (size_t t = 0; t < slots.size(); ++t)
    if (slots[t] < 0)
      for (int64_t e = 0; e < row_elems; ++e) v[t * size_t(row_elems) + size_t(e)] = std::numeric_limits<float>::quiet_NaN();
  return v;
}

}  // namespace

TEST_CASE("fused defaults: add_rms_norm == add then rms_norm, bit for bit") {
  auto be = make_cpu_backend(2);
  std::mt19937 rng(101);
  for (auto [t, d] : {std::pair<int64_t, int64_t>{1, 576}, {37, 100}, {5, 7}}) {
    CAPTURE(t);
    CAPTURE(d);
    const auto h = random_floats(rng, size_t(t * d), -3.0f, 3.0f), b = random_floats(rng, size_t(t * d));
    const auto w = random_floats(rng, size_t(d), 0.5f, 1.5f);
    BackendTensor hidden(*be, DType::F32, {t, d}), branch(*be, DType::F32, {t, d}), normed(*be, DType::F32, {t, d});
    BackendTensor hidden2(*be, DType::F32, {t, d}), normed2(*be, DType::F32, {t, d}), weight(*be, DType::F32, {d});
    hidden.upload(h);
    hidden2.upload(h);
    branch.upload(b);
    weight.upload(w);
    be->add_rms_norm(hidden.tensor, branch.tensor, weight.tensor, 1e-6f, normed.tensor);
    be->add(hidden2.tensor, branch.tensor, hidden2.tensor);
    be->rms_norm(hidden2.tensor, weight.tensor, 1e-6f, normed2.tensor);
    CHECK(bits_equal(hidden.download(), hidden2.download()));
    CHECK(bits_equal(normed.download(), normed2.download()));
    CHECK(branch.download() == b);  // the branch is read only
  }
}

TEST_CASE("fused defaults: gated_mlp == two matmuls then swiglu / geglu, bit for bit") {
  auto be = make_cpu_backend(2);
  std::mt19937 rng(102);
  const int64_t in = 256, f = 70;
  for (DType dtype : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_K}) {
    BackendWeights wg(*be, random_weight_bytes(dtype, f, in, rng), dtype, {f, in});
    BackendWeights wu(*be, random_weight_bytes(dtype, f, in, rng), dtype, {f, in});
    for (int64_t t : {1, 9}) {
      for (bool gelu : {false, true}) {
        CAPTURE(dtype_name(dtype));
        CAPTURE(t);
        CAPTURE(gelu);
        const auto xv = random_floats(rng, size_t(t * in));
        BackendTensor x(*be, DType::F32, {t, in}), out(*be, DType::F32, {t, f}), scratch(*be, DType::F32, {t, f});
        BackendTensor gate(*be, DType::F32, {t, f}), up(*be, DType::F32, {t, f});
        x.upload(xv);
        be->gated_mlp(x.tensor, wg.tensor, wu.tensor, gelu, scratch.tensor, out.tensor);
        be->matmul(x.tensor, wg.tensor, gate.tensor);
        be->matmul(x.tensor, wu.tensor, up.tensor);
        if (gelu) be->geglu(gate.tensor, up.tensor, gate.tensor);
        else be->swiglu(gate.tensor, up.tensor, gate.tensor);
        CHECK(bits_equal(out.download(), gate.download()));
        CHECK(x.download() == xv);
      }
    }
  }
}

TEST_CASE("fused defaults: rope_write_kv == rope(q), rope(k), write_kv; negative slots skip their rows") {
  auto be = make_cpu_backend(2);
  std::mt19937 rng(103);
  const int64_t t = 6, heads = 4, kv_heads = 2, hd = 64, blocks = 4, block_size = 4;
  for (DType cache_dtype : {DType::F32, DType::F16}) {
    for (bool neox : {false, true}) {
      CAPTURE(dtype_name(cache_dtype));
      CAPTURE(neox);
      RopeParams rope;
      rope.neox = neox;
      rope.theta = 500000.0f;
      const std::vector<int32_t> positions = {0, 7, 3, 1000, 2, 15};
      const std::vector<int32_t> slots = {5, -1, 0, 15, -1, 9};  // rows 1 and 4: padding
      const auto qv = random_floats(rng, size_t(t * heads * hd));
      const auto kv = with_nan_rows(random_floats(rng, size_t(t * kv_heads * hd)), kv_heads * hd, slots);
      const auto vv = with_nan_rows(random_floats(rng, size_t(t * kv_heads * hd)), kv_heads * hd, slots);
      // Caches start full of earlier values, so untouched rows are visible.
      const int64_t cache_elems = blocks * block_size * kv_heads * hd;
      std::vector<std::byte> k_init, v_init;
      {
        const auto kf = random_floats(rng, size_t(cache_elems)), vf = random_floats(rng, size_t(cache_elems));
        auto to_bytes = [&](const std::vector<float>& f) {
          std::vector<std::byte> out;
          if (cache_dtype == DType::F32) {
            out.resize(f.size() * 4);
            std::memcpy(out.data(), f.data(), out.size());
          } else {
            out.resize(f.size() * 2);
            for (size_t i = 0; i < f.size(); ++i) {
              const uint16_t h = cpu::fp32_to_fp16(f[i]);
              std::memcpy(&out[i * 2], &h, 2);
            }
          }
          return out;
        };
        k_init = to_bytes(kf);
        v_init = to_bytes(vf);
      }
      struct Side {
        BackendTensor q, k, v, pos, slot, kc, vc;
      };
      auto make_side = [&]() {
        Side s{BackendTensor(*be, DType::F32, {t, heads, hd}),      BackendTensor(*be, DType::F32, {t, kv_heads, hd}),
               BackendTensor(*be, DType::F32, {t, kv_heads, hd}),   BackendTensor(*be, DType::I32, {t}),
               BackendTensor(*be, DType::I32, {t}),
               BackendTensor(*be, cache_dtype, {blocks, block_size, kv_heads, hd}),
               BackendTensor(*be, cache_dtype, {blocks, block_size, kv_heads, hd})};
        s.q.upload(qv);
        s.k.upload(kv);
        s.v.upload(vv);
        s.pos.upload(positions);
        s.slot.upload(slots);
        s.kc.upload_bytes(k_init);
        s.vc.upload_bytes(v_init);
        return s;
      };
      Side fused = make_side(), plain = make_side();
      be->rope_write_kv(fused.q.tensor, fused.k.tensor, fused.v.tensor, fused.pos.tensor, rope,
                        {fused.kc.tensor, fused.vc.tensor}, fused.slot.tensor);
      be->rope(plain.q.tensor, plain.pos.tensor, rope);
      be->rope(plain.k.tensor, plain.pos.tensor, rope);
      be->write_kv(plain.k.tensor, plain.v.tensor, {plain.kc.tensor, plain.vc.tensor}, plain.slot.tensor);
      CHECK(bits_equal(fused.q.download(), plain.q.download()));
      // The rotated k also goes back into k (NaN rows stay NaN: compare bits).
      CHECK(bits_equal(fused.k.download(), plain.k.download()));
      CHECK(fused.kc.download<std::byte>() == plain.kc.download<std::byte>());
      CHECK(fused.vc.download<std::byte>() == plain.vc.download<std::byte>());

      // Exactly the non-negative slots changed; the padding rows' NaNs went nowhere.
      const size_t elem = cache_dtype == DType::F32 ? 4 : 2, row = size_t(kv_heads * hd) * elem;
      const auto kc = fused.kc.download<std::byte>(), vc = fused.vc.download<std::byte>();
      std::vector<bool> written(size_t(blocks * block_size), false);
      for (int32_t s : slots)
        if (s >= 0) written[size_t(s)] = true;
      for (size_t s = 0; s < written.size(); ++s) {
        CAPTURE(s);
        const bool k_same = std::equal(kc.begin() + s * row, kc.begin() + (s + 1) * row, k_init.begin() + s * row);
        const bool v_same = std::equal(vc.begin() + s * row, vc.begin() + (s + 1) * row, v_init.begin() + s * row);
        CHECK(k_same == !written[s]);
        CHECK(v_same == !written[s]);
      }
    }
  }
}

TEST_CASE("write_kv: a negative slot skips its row and leaves every cache row it does not name untouched") {
  auto be = make_cpu_backend(2);
  std::mt19937 rng(104);
  const int64_t kv_heads = 2, hd = 8;
  const std::vector<int32_t> slots = {3, -1, 7, -1, -5};
  const int64_t t = int64_t(slots.size());
  const auto k = with_nan_rows(random_floats(rng, size_t(t * kv_heads * hd)), kv_heads * hd, slots);
  const auto v = with_nan_rows(random_floats(rng, size_t(t * kv_heads * hd)), kv_heads * hd, slots);
  const auto k_init = random_floats(rng, size_t(3 * 4 * kv_heads * hd));
  const auto v_init = random_floats(rng, size_t(3 * 4 * kv_heads * hd));
  BackendTensor kt(*be, DType::F32, {t, kv_heads, hd}), vt(*be, DType::F32, {t, kv_heads, hd}), st(*be, DType::I32, {t});
  BackendTensor kc(*be, DType::F32, {3, 4, kv_heads, hd}), vc(*be, DType::F32, {3, 4, kv_heads, hd});
  kt.upload(k);
  vt.upload(v);
  st.upload(slots);
  kc.upload(k_init);
  vc.upload(v_init);
  be->write_kv(kt.tensor, vt.tensor, {kc.tensor, vc.tensor}, st.tensor);
  std::vector<float> k_expect = k_init, v_expect = v_init;
  const size_t row = size_t(kv_heads * hd);
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i] >= 0)
      for (size_t e = 0; e < row; ++e) {
        k_expect[size_t(slots[i]) * row + e] = k[i * row + e];
        v_expect[size_t(slots[i]) * row + e] = v[i * row + e];
      }
  CHECK(bits_equal(kc.download(), k_expect));
  CHECK(bits_equal(vc.download(), v_expect));
}

TEST_CASE("copy: contiguous, slices and strided rows, F32 and F16") {
  auto be = make_cpu_backend(2);
  std::mt19937 rng(105);
  // Contiguous, large enough to be split over the compute threads.
  {
    const int64_t n = (3 << 20) / 4 + 17;
    const auto src_v = random_floats(rng, size_t(n));
    BackendTensor src(*be, DType::F32, {n}), dst(*be, DType::F32, {n});
    src.upload(src_v);
    be->copy(src.tensor, dst.tensor);
    CHECK(bits_equal(dst.download(), src_v));
  }
  // F16 rows, a slice into the middle of a larger tensor.
  {
    std::vector<uint16_t> halves(10 * 6);
    for (auto& h : halves) h = static_cast<uint16_t>(rng() & 0x7BFF);
    BackendTensor src(*be, DType::F16, {10, 6}), dst(*be, DType::F16, {10, 6});
    src.upload(halves);
    dst.upload(std::vector<uint16_t>(halves.size(), 0));
    be->copy(src.tensor.slice(2, 5), dst.tensor.slice(4, 5));
    const auto got = dst.download<uint16_t>();
    for (int64_t r = 0; r < 10; ++r)
      for (int64_t c = 0; c < 6; ++c) {
        const uint16_t expect = r >= 4 && r < 9 ? halves[size_t((r - 2) * 6 + c)] : 0;
        CHECK(got[size_t(r * 6 + c)] == expect);
      }
  }
  // Strided -> contiguous, contiguous -> strided, strided -> strided; padding untouched.
  {
    const int64_t rows = 9, cols = 13;
    const auto v = random_floats(rng, size_t(rows * cols));
    BackendTensor strided_src(*be, DType::F32, {rows, cols}, 3), contiguous(*be, DType::F32, {rows, cols});
    BackendTensor strided_dst(*be, DType::F32, {rows, cols}, 5), strided_dst2(*be, DType::F32, {rows, cols}, 1);
    strided_src.upload(v);
    strided_dst.upload(std::vector<float>(size_t(rows * cols), 0.0f));
    strided_dst2.upload(std::vector<float>(size_t(rows * cols), 0.0f));
    be->copy(strided_src.tensor, contiguous.tensor);
    CHECK(bits_equal(contiguous.download(), v));
    be->copy(contiguous.tensor, strided_dst.tensor);
    CHECK(bits_equal(strided_dst.download(), v));
    CHECK(strided_dst.padding_intact());
    be->copy(strided_src.tensor, strided_dst2.tensor);
    CHECK(bits_equal(strided_dst2.download(), v));
    CHECK(strided_dst2.padding_intact());
    CHECK(strided_src.padding_intact());
  }
}

TEST_CASE("step hooks: the defaults record nothing and run the ops on every call") {
  auto be = make_cpu_backend(1);
  CHECK(be->recorded_step_rows(1) == 0);
  CHECK(be->recorded_step_rows(7) == 0);
  const std::vector<SequenceSlice> seqs = {{0, 1, 3, {0}}, {1, 1, 0, {1}}};
  be->begin_step(seqs, 3);
  int runs = 0;
  be->run_recorded(5, [&] { ++runs; });
  be->run_recorded(5, [&] { ++runs; });
  be->forget_recordings();
  be->run_recorded(5, [&] { ++runs; });
  CHECK(runs == 3);
}

}  // namespace sluice::backends::test
