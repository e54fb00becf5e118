// Op parity of the CUDA backend against the CPU backend (the idea of GGML's
// test-backend-ops): every op of backends/backend.h runs on the same random
// inputs (fixed seeds) on both backends, tensors allocated on each with
// allocate + upload (weights with wrap_weights), results downloaded and compared.
// Only the public interface is used (backend_factory.h), so this file compiles in
// every build; each TEST_CASE starts by getting the CUDA backend or skipping with a
// MESSAGE ("built without CUDA", "no CUDA device (cudaErrorNoDevice ...)").
//
// This file: matmul for every weight dtype and the fused ops. Tolerances: cuda_parity_util.h.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/backends/cuda/cuda_parity_util.h"

namespace sluice::backends::test::unit_backends_cuda_test_cuda_parity_matmul {

TEST_CASE("cuda parity: matmul, every weight dtype, T in {1, 3, 8, 9, 64, 257}") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA matmul parity (normalized; checked with the per-element bound too)");
  std::mt19937 rng(3);
  struct Shape {
    int64_t out, in;
  };
  const int64_t kTs[] = {1, 3, 8, 9, 64, 257};
  for (DType dtype : kMatmulDTypes) {
    const int64_t block = dtype_traits(dtype).block_size;
    std::vector<Shape> shapes;
    if (block == 1) shapes = {{64, 256}, {37, 100}, {130, 512}, {19, 7}};
    else if (block == 32) shapes = {{64, 256}, {37, 96}, {130, 512}};  // 96: not a multiple of 256
    else shapes = {{64, 256}, {37, 512}, {130, 768}};
    for (const Shape s : shapes) {
      const std::vector<std::byte> w_bytes = random_weight_bytes(dtype, s.out, s.in, rng);
      const std::vector<float> w = dequantized(dtype, w_bytes, s.out, s.in);
      TwinWeights wt(b, w_bytes, dtype, {s.out, s.in});
      const std::vector<float> x_all = random_floats(rng, size_t(257 * s.in));
      const DotSums sums_all = dot_sums(x_all, w, 257, s.out, s.in);
      for (int64_t t : kTs) {
        const std::string what = std::string(dtype_name(dtype)) + " T=" + std::to_string(t) + " out=" +
                                 std::to_string(s.out) + " in=" + std::to_string(s.in);
        CAPTURE(what);
        Twin x(b, DType::F32, {t, s.in}), y(b, DType::F32, {t, s.out});
        x.upload(host_rows(x_all, 0, t, s.in));
        b.cpu->matmul(x.c.tensor, wt.c.tensor, y.c.tensor);
        b.gpu->matmul(x.g.tensor, wt.g.tensor, y.g.tensor);
        DotSums sums = sums_all;
        sums.t = t;
        const auto gpu = y.g.download(), cpu = y.c.download();
        check_matmul(what, dtype, sums, gpu, cpu);
        log.check(std::string("matmul ") + std::string(dtype_name(dtype)), what, gpu, cpu,
                  matmul_normalized_tolerance(dtype));
      }
    }
  }
  // Strided x and y (rows of wider tensors): y's padding stays untouched.
  for (DType dtype : {DType::F32, DType::F16, DType::Q4_0, DType::Q6_K}) {
    for (int64_t t : {3, 9, 64}) {
      const int64_t out = 40, in = 256;
      const std::string what = std::string("strided ") + std::string(dtype_name(dtype)) + " T=" + std::to_string(t);
      CAPTURE(what);
      const std::vector<std::byte> w_bytes = random_weight_bytes(dtype, out, in, rng);
      TwinWeights wt(b, w_bytes, dtype, {out, in});
      const auto xv = random_floats(rng, size_t(t * in));
      Twin x(b, DType::F32, {t, in}, 4), y(b, DType::F32, {t, out}, 3);
      x.upload(xv);
      y.upload(std::vector<float>(size_t(t * out), 0.0f));
      b.cpu->matmul(x.c.tensor, wt.c.tensor, y.c.tensor);
      b.gpu->matmul(x.g.tensor, wt.g.tensor, y.g.tensor);
      const DotSums sums = dot_sums(xv, dequantized(dtype, w_bytes, out, in), t, out, in);
      const auto gpu = y.g.download(), cpu = y.c.download();
      check_matmul(what, dtype, sums, gpu, cpu);
      log.check("matmul strided", what, gpu, cpu, matmul_normalized_tolerance(dtype));
      CHECK(y.g.padding_intact());
    }
  }
}

// Decode steps of 1 to 8 tokens take the GEMV for F16, BF16 and quantized weights; a
// token's result must not depend on how many tokens share the step (the kernel sums
// each row in one fixed order), bit for bit, for matmul and the fused gated MLP.
TEST_CASE("cuda gemv: a token's result is the same bits at T = 1 and T = 8") {
  Backends b = backends_or_skip();
  if (!b) return;
  std::mt19937 rng(13);
  const int64_t out = 96, in = 512;
  for (DType dtype : {DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K}) {
    CAPTURE(dtype_name(dtype));
    const auto gate_bytes = random_weight_bytes(dtype, out, in, rng);
    const auto up_bytes = random_weight_bytes(dtype, out, in, rng);
    TwinWeights gate(b, gate_bytes, dtype, {out, in}), up(b, up_bytes, dtype, {out, in});
    const auto x_all = random_floats(rng, size_t(8 * in));
    Twin x8(b, DType::F32, {8, in}), y8(b, DType::F32, {8, out}), g8(b, DType::F32, {8, out}), s8(b, DType::F32, {8, out});
    x8.upload(x_all);
    b.gpu->matmul(x8.g.tensor, gate.g.tensor, y8.g.tensor);
    b.gpu->gated_mlp(x8.g.tensor, gate.g.tensor, up.g.tensor, false, s8.g.tensor, g8.g.tensor);
    const auto y_all = y8.g.download(), gated_all = g8.g.download();
    for (int64_t r : {0, 5, 7}) {
      CAPTURE(r);
      Twin x1(b, DType::F32, {1, in}), y1(b, DType::F32, {1, out}), g1(b, DType::F32, {1, out}), s1(b, DType::F32, {1, out});
      x1.upload(host_rows(x_all, r, 1, in));
      b.gpu->matmul(x1.g.tensor, gate.g.tensor, y1.g.tensor);
      b.gpu->gated_mlp(x1.g.tensor, gate.g.tensor, up.g.tensor, false, s1.g.tensor, g1.g.tensor);
      const auto y_row = host_rows(y_all, r, 1, out), gated_row = host_rows(gated_all, r, 1, out);
      CHECK(std::memcmp(y1.g.download().data(), y_row.data(), y_row.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(g1.g.download().data(), gated_row.data(), gated_row.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("cuda parity: fused add_rms_norm, gated_mlp, rope_write_kv") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA fused-op parity");
  std::mt19937 rng(9);

  // add_rms_norm: hidden += branch is one IEEE add (exact); normed as rms_norm.
  for (auto [t, d] : {std::pair<int64_t, int64_t>{1, 576}, {37, 1024}, {9, 4096}, {3, 7}}) {
    CAPTURE(t);
    CAPTURE(d);
    Twin hidden(b, DType::F32, {t, d}), branch(b, DType::F32, {t, d}), normed(b, DType::F32, {t, d}), w(b, DType::F32, {d});
    hidden.upload(random_floats(rng, size_t(t * d), -3.0f, 3.0f));
    branch.upload(random_floats(rng, size_t(t * d)));
    w.upload(random_floats(rng, size_t(d), 0.5f, 1.5f));
    b.cpu->add_rms_norm(hidden.c.tensor, branch.c.tensor, w.c.tensor, 1e-6f, normed.c.tensor);
    b.gpu->add_rms_norm(hidden.g.tensor, branch.g.tensor, w.g.tensor, 1e-6f, normed.g.tensor);
    log.check("add_rms_norm hidden", "", hidden.g.download(), hidden.c.download(), 0.0);
    log.check("add_rms_norm normed", "", normed.g.download(), normed.c.download(), 1e-5);
  }

  // gated_mlp: the matmul bound of gate and up carried through act(g) * u
  // (|act'| <= 1.2 for silu and gelu_tanh), plus the element-wise 1e-5.
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K}) {
    const int64_t f = 96, in = 512;
    const auto wg_bytes = random_weight_bytes(dtype, f, in, rng), wu_bytes = random_weight_bytes(dtype, f, in, rng);
    TwinWeights wg(b, wg_bytes, dtype, {f, in}), wu(b, wu_bytes, dtype, {f, in});
    const auto wg_f = dequantized(dtype, wg_bytes, f, in), wu_f = dequantized(dtype, wu_bytes, f, in);
    for (int64_t t : {1, 3, 8, 9, 64}) {
      for (bool gelu : {false, true}) {
        const std::string what = std::string(dtype_name(dtype)) + " T=" + std::to_string(t) + (gelu ? " gelu" : " silu");
        CAPTURE(what);
        const auto xv = random_floats(rng, size_t(t * in));
        Twin x(b, DType::F32, {t, in}), out(b, DType::F32, {t, f}), scratch(b, DType::F32, {t, f});
        Twin gate(b, DType::F32, {t, f}), up(b, DType::F32, {t, f});
        x.upload(xv);
        b.cpu->gated_mlp(x.c.tensor, wg.c.tensor, wu.c.tensor, gelu, scratch.c.tensor, out.c.tensor);
        b.gpu->gated_mlp(x.g.tensor, wg.g.tensor, wu.g.tensor, gelu, scratch.g.tensor, out.g.tensor);
        b.cpu->matmul(x.c.tensor, wg.c.tensor, gate.c.tensor);
        b.cpu->matmul(x.c.tensor, wu.c.tensor, up.c.tensor);
        const auto gv = gate.c.download(), uv = up.c.download(), cpu = out.c.download(), gpu = out.g.download();
        const DotSums sg = dot_sums(xv, wg_f, t, f, in), su = dot_sums(xv, wu_f, t, f, in);
        std::vector<double> bound(cpu.size());
        for (int64_t r = 0; r < t; ++r)
          for (int64_t o = 0; o < f; ++o) {
            const size_t i = size_t(r * f + o);
            const double g = gv[i], u = uv[i];
            const double act = gelu ? 0.5 * g * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (g + 0.044715 * g * g * g)))
                                    : g / (1 + std::exp(-g));
            const double bg = matmul_bound(dtype, sg, r, o), bu = matmul_bound(dtype, su, r, o);
            bound[i] = 1.2 * bg * (std::fabs(u) + bu) + std::fabs(act) * bu + 1e-5 * std::max(1.0, std::fabs(act * u));
          }
        check_elementwise_bound("gated_mlp " + what, gpu, cpu, bound);
        log.check(std::string("gated_mlp ") + std::string(dtype_name(dtype)), what, gpu, cpu,
                  1.5 * matmul_normalized_tolerance(dtype));
      }
    }
  }

  // rope_write_kv: q and k as rope; the cache holds the rotated k (F16: one more
  // rounding, which may go either way by half an F16 ulp), v exactly; padding
  // slots leave their cache rows alone.
  for (DType cache_dtype : {DType::F32, DType::F16}) {
    for (const RopeParams& p : rope_variants()) {
      const int64_t t = 23, heads = 8, kvh = 2, hd = 64, blocks = 4, block_size = 16;
      const std::string what = std::string(dtype_name(cache_dtype)) + " " + rope_name(p);
      CAPTURE(what);
      const auto qv = random_floats(rng, size_t(t * heads * hd), -2.0f, 2.0f);
      const auto kv = random_floats(rng, size_t(t * kvh * hd), -2.0f, 2.0f);
      const auto vv = random_floats(rng, size_t(t * kvh * hd), -2.0f, 2.0f);
      const auto pos = rope_positions(rng, t);
      std::vector<int32_t> slots(size_t(blocks * block_size));
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng);
      slots.resize(size_t(t));
      slots[3] = slots[7] = -1;
      const int64_t cache_elems = blocks * block_size * kvh * hd;
      const auto k_init = cache_bytes(random_floats(rng, size_t(cache_elems)), cache_dtype);
      const auto v_init = cache_bytes(random_floats(rng, size_t(cache_elems)), cache_dtype);
      Twin q(b, DType::F32, {t, heads, hd}), k(b, DType::F32, {t, kvh, hd}), v(b, DType::F32, {t, kvh, hd});
      Twin pt(b, DType::I32, {t}), st(b, DType::I32, {t});
      Twin kc(b, cache_dtype, {blocks, block_size, kvh, hd}), vc(b, cache_dtype, {blocks, block_size, kvh, hd});
      q.upload(qv);
      k.upload(kv);
      v.upload(vv);
      pt.upload(pos);
      st.upload(slots);
      kc.upload_bytes(k_init);
      vc.upload_bytes(v_init);
      b.cpu->rope_write_kv(q.c.tensor, k.c.tensor, v.c.tensor, pt.c.tensor, p, cpu_cache(kc, vc), st.c.tensor);
      b.gpu->rope_write_kv(q.g.tensor, k.g.tensor, v.g.tensor, pt.g.tensor, p, gpu_cache(kc, vc), st.g.tensor);
      const auto q_gpu = q.g.download(), q_cpu = q.c.download(), k_gpu = k.g.download(), k_cpu = k.c.download();
      // Padding rows (slot < 0) are not compared in q and k: the interface rotates
      // every row, but nothing reads a padding row's q or k, and a kernel that
      // skips their rotation along with their store is no worse for it.
      std::vector<double> q_bound = rope_bounds(qv, pos, heads, hd, p), k_bound = rope_bounds(kv, pos, kvh, hd, p);
      for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i] < 0) {
          std::fill_n(q_bound.begin() + long(i * size_t(heads * hd)), heads * hd, INFINITY);
          std::fill_n(k_bound.begin() + long(i * size_t(kvh * hd)), kvh * hd, INFINITY);
        }
      check_elementwise_bound("rope_write_kv q " + what, q_gpu, q_cpu, q_bound);
      check_elementwise_bound("rope_write_kv k " + what, k_gpu, k_cpu, k_bound);
      {
        std::vector<float> qg, qc, kg, kc2;
        for (size_t i = 0; i < slots.size(); ++i)
          if (slots[i] >= 0) {
            const auto qi = [&](const std::vector<float>& v) { return host_rows(v, int64_t(i), 1, heads * hd); };
            const auto ki = [&](const std::vector<float>& v) { return host_rows(v, int64_t(i), 1, kvh * hd); };
            for (auto [dst, src] : {std::pair{&qg, qi(q_gpu)}, {&qc, qi(q_cpu)}, {&kg, ki(k_gpu)}, {&kc2, ki(k_cpu)}})
              dst->insert(dst->end(), src.begin(), src.end());
          }
        log.record("rope_write_kv q/k", std::max(normalized_error(qg, qc), normalized_error(kg, kc2)), -1);
      }

      // The caches, slot by slot.
      const auto kc_gpu = cache_values(kc.g.download<std::byte>(), cache_dtype);
      const auto kc_cpu = cache_values(kc.c.download<std::byte>(), cache_dtype);
      const auto vc_gpu = vc.g.download<std::byte>(), vc_cpu = vc.c.download<std::byte>();
      CHECK(vc_gpu == vc_cpu);  // v is stored, not computed
      const size_t row = size_t(kvh * hd);
      std::vector<double> cache_bound(kc_cpu.size(), 0.0);  // 0: rows no token names stay as they were
      for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i] >= 0)
          for (size_t e = 0; e < row; ++e)
            cache_bound[size_t(slots[i]) * row + e] =
                k_bound[i * row + e] + (cache_dtype == DType::F16 ? std::fabs(k_cpu[i * row + e]) * 0x1p-10 + 0x1p-24 : 0.0);
      // Rows that no token names have bound 0: exactly as they were, as on the CPU.
      check_elementwise_bound("rope_write_kv k cache " + what, kc_gpu, kc_cpu, cache_bound);
    }
  }
}

}  // namespace sluice::backends::test
