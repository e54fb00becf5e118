// Op parity of the CUDA backend against the CPU backend (the idea of GGML's
// test-backend-ops): every op of backends/backend.h runs on the same random
// inputs (fixed seeds) on both backends, tensors allocated on each with
// allocate + upload (weights with wrap_weights), results downloaded and compared.
// Only the public interface is used (backend_factory.h), so this file compiles in
// every build; each TEST_CASE starts by getting the CUDA backend or skipping with a
// MESSAGE ("built without CUDA", "no CUDA device (cudaErrorNoDevice ...)").
//
// This file: memory, embed, norms, element-wise ops, transpose, rope and write_kv. Tolerances: cuda_parity_util.h.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/backends/cuda/cuda_parity_util.h"

namespace sluice::backends::test::unit_backends_cuda_test_cuda_parity_ops {

TEST_CASE("cuda parity: buffers, upload/download, fill_zero, copy, memory_info") {
  Backends b = backends_or_skip();
  if (!b) return;
  Backend& gpu = *b.gpu;
  CHECK(gpu.name() == "cuda:0");
  CHECK(gpu.device() == DeviceKind::cuda);
  const MemoryInfo mem = gpu.memory_info();
  CHECK(mem.total_bytes > 0);
  CHECK(mem.free_bytes <= mem.total_bytes);
  std::mt19937 rng(1);

  // Round trips of every element size, odd byte counts included.
  {
    const auto f = random_floats(rng, 37 * 100);
    BackendTensor t(gpu, DType::F32, {37, 100});
    t.upload(f);
    CHECK(bits_equal(t.download(), f));
    const auto ints = random_ints(rng, 1001, -100000, 100000);
    BackendTensor i(gpu, DType::I32, {1001});
    i.upload(ints);
    CHECK(i.download<int32_t>() == ints);
    std::vector<uint16_t> halves(333);
    for (auto& h : halves) h = uint16_t(rng());
    BackendTensor h(gpu, DType::F16, {3, 111});
    h.upload(halves);
    CHECK(h.download<uint16_t>() == halves);
    std::vector<std::byte> bytes(1001);
    for (auto& x : bytes) x = std::byte(rng() & 0xFF);
    BackendTensor b8(gpu, DType::I8, {7, 143});
    b8.upload_bytes(bytes);
    CHECK(b8.download<std::byte>() == bytes);
  }
  // fill_zero of a slice and of strided rows: exactly those elements.
  {
    const auto f = random_floats(rng, 10 * 24);
    BackendTensor t(gpu, DType::F32, {10, 24});
    t.upload(f);
    gpu.fill_zero(t.tensor.slice(3, 4));
    const auto z = t.download();
    for (size_t i = 0; i < z.size(); ++i) CHECK(z[i] == (i >= 3 * 24 && i < 7 * 24 ? 0.0f : f[i]));
    BackendTensor s(gpu, DType::F32, {6, 10}, 3);
    s.upload(random_floats(rng, 60));
    gpu.fill_zero(s.tensor);
    CHECK(s.download() == std::vector<float>(60, 0.0f));
    CHECK(s.padding_intact());
  }
  // copy: contiguous (large), slices, strided in either direction.
  {
    const int64_t n = (5 << 20) / 4 + 3;
    const auto f = random_floats(rng, size_t(n));
    BackendTensor src(gpu, DType::F32, {n}), dst(gpu, DType::F32, {n});
    src.upload(f);
    gpu.copy(src.tensor, dst.tensor);
    CHECK(bits_equal(dst.download(), f));

    std::vector<uint16_t> halves(10 * 6);
    for (auto& h : halves) h = uint16_t(rng() & 0x7BFF);
    BackendTensor hs(gpu, DType::F16, {10, 6}), hd(gpu, DType::F16, {10, 6});
    hs.upload(halves);
    hd.upload(std::vector<uint16_t>(halves.size(), 0));
    gpu.copy(hs.tensor.slice(2, 5), hd.tensor.slice(4, 5));
    const auto got = hd.download<uint16_t>();
    for (int64_t r = 0; r < 10; ++r)
      for (int64_t c = 0; c < 6; ++c)
        CHECK(got[size_t(r * 6 + c)] == (r >= 4 && r < 9 ? halves[size_t((r - 2) * 6 + c)] : 0));

    const int64_t rows = 9, cols = 13;
    const auto v = random_floats(rng, size_t(rows * cols));
    BackendTensor strided(gpu, DType::F32, {rows, cols}, 3), contiguous(gpu, DType::F32, {rows, cols});
    BackendTensor strided_dst(gpu, DType::F32, {rows, cols}, 5);
    strided.upload(v);
    strided_dst.upload(std::vector<float>(v.size(), 0.0f));
    gpu.copy(strided.tensor, contiguous.tensor);
    CHECK(bits_equal(contiguous.download(), v));
    gpu.copy(contiguous.tensor, strided_dst.tensor);
    CHECK(bits_equal(strided_dst.download(), v));
    CHECK(strided_dst.padding_intact());
  }
  // Weights wrapped from host bytes come back as they went in.
  {
    std::vector<std::byte> bytes = random_weight_bytes(DType::Q4_K, 3, 256, rng);
    BackendWeights w(gpu, bytes, DType::Q4_K, {3, 256});
    std::vector<std::byte> back(bytes.size());
    gpu.download(w.tensor, back);
    gpu.synchronize();
    CHECK(back == bytes);
  }
}

TEST_CASE("cuda parity: embed of every table dtype") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA embed parity");
  std::mt19937 rng(2);
  const int64_t vocab = 300, t = 37;
  for (DType dtype : kMatmulDTypes) {
    CAPTURE(dtype_name(dtype));
    const int64_t block = dtype_traits(dtype).block_size;
    const int64_t d = block == 1 ? 100 : block == 32 ? 96 : 512;
    TwinWeights table(b, random_weight_bytes(dtype, vocab, d, rng), dtype, {vocab, d});
    std::vector<int32_t> ids = random_ints(rng, size_t(t), 0, int32_t(vocab - 1));
    ids[0] = 0;
    ids[1] = int32_t(vocab - 1);
    ids[2] = ids[3];  // a repeated id
    Twin idt(b, DType::I32, {t}), out(b, DType::F32, {t, d});
    idt.upload(ids);
    b.cpu->embed(table.c.tensor, idt.c.tensor, out.c.tensor);
    b.gpu->embed(table.g.tensor, idt.g.tensor, out.g.tensor);
    log.check("embed " + std::string(dtype_name(dtype)), "", out.g.download(), out.c.download(),
              is_float_dtype(dtype) ? 0.0 : 1e-6);
  }
  // Gathering rows of an activation (how Model picks scattered logit rows), into a
  // strided output.
  {
    const int64_t rows = 50, d = 576;
    Twin hidden(b, DType::F32, {rows, d}), idt(b, DType::I32, {5}), out(b, DType::F32, {5, d}, 4);
    hidden.upload(random_floats(rng, size_t(rows * d), -5.0f, 5.0f));
    idt.upload(std::vector<int32_t>{49, 0, 17, 17, 3});
    out.upload(std::vector<float>(size_t(5 * d), 0.0f));
    b.cpu->embed(hidden.c.tensor, idt.c.tensor, out.c.tensor);
    b.gpu->embed(hidden.g.tensor, idt.g.tensor, out.g.tensor);
    log.check("embed of an F32 activation", "", out.g.download(), out.c.download(), 0.0);
    CHECK(out.g.padding_intact());
  }
}

TEST_CASE("cuda parity: rms_norm and layer_norm (with and without bias), in place, strided") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA norm parity");
  std::mt19937 rng(4);
  for (auto [t, d] : {std::pair<int64_t, int64_t>{1, 576}, {37, 100}, {9, 4096}, {5, 7}, {64, 1024}}) {
    CAPTURE(t);
    CAPTURE(d);
    const auto xv = random_floats(rng, size_t(t * d), -3.0f, 5.0f);
    Twin w(b, DType::F32, {d}), bias(b, DType::F32, {d});
    w.upload(random_floats(rng, size_t(d), 0.5f, 1.5f));
    bias.upload(random_floats(rng, size_t(d)));
    for (int64_t pad : {0, 3}) {
      CAPTURE(pad);
      Twin x(b, DType::F32, {t, d}, pad), out(b, DType::F32, {t, d}, pad == 0 ? 0 : 2);
      x.upload(xv);
      out.upload(std::vector<float>(xv.size(), 0.0f));
      b.cpu->rms_norm(x.c.tensor, w.c.tensor, 1e-5f, out.c.tensor);
      b.gpu->rms_norm(x.g.tensor, w.g.tensor, 1e-5f, out.g.tensor);
      log.check("rms_norm", "", out.g.download(), out.c.download(), 1e-5);
      CHECK(out.g.padding_intact());
      b.cpu->rms_norm(x.c.tensor, w.c.tensor, 1e-6f, x.c.tensor);  // in place
      b.gpu->rms_norm(x.g.tensor, w.g.tensor, 1e-6f, x.g.tensor);
      log.check("rms_norm in place", "", x.g.download(), x.c.download(), 1e-5);
      CHECK(x.g.padding_intact());
      for (bool with_bias : {true, false}) {
        CAPTURE(with_bias);
        x.upload(xv);
        b.cpu->layer_norm(x.c.tensor, w.c.tensor, with_bias ? bias.c.tensor : Tensor{}, 1e-5f, out.c.tensor);
        b.gpu->layer_norm(x.g.tensor, w.g.tensor, with_bias ? bias.g.tensor : Tensor{}, 1e-5f, out.g.tensor);
        log.check(with_bias ? "layer_norm bias" : "layer_norm no bias", "", out.g.download(), out.c.download(), 1e-5);
        b.cpu->layer_norm(x.c.tensor, w.c.tensor, with_bias ? bias.c.tensor : Tensor{}, 1e-5f, x.c.tensor);
        b.gpu->layer_norm(x.g.tensor, w.g.tensor, with_bias ? bias.g.tensor : Tensor{}, 1e-5f, x.g.tensor);
        log.check("layer_norm in place", "", x.g.download(), x.c.download(), 1e-5);
        CHECK(x.g.padding_intact());
      }
    }
  }
}

TEST_CASE("cuda parity: swiglu, geglu, add, mul, scale, softmax") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA element-wise parity");
  std::mt19937 rng(5);
  for (auto [t, d] : {std::pair<int64_t, int64_t>{1, 576}, {37, 1024}, {3, 7}, {2, 49152}}) {
    for (int64_t pad : {0, 5}) {
      CAPTURE(t);
      CAPTURE(d);
      CAPTURE(pad);
      const size_t n = size_t(t * d);
      const auto g = random_floats(rng, n, -8.0f, 8.0f), u = random_floats(rng, n, -2.0f, 2.0f);
      Twin gt(b, DType::F32, {t, d}, pad), ut(b, DType::F32, {t, d}, pad), out(b, DType::F32, {t, d}, pad ? 1 : 0);
      ut.upload(u);
      out.upload(std::vector<float>(n, 0.0f));
      auto both = [&](auto&& op) {
        op(*b.cpu, [](Twin& x) -> const Tensor& { return x.c.tensor; });
        op(*b.gpu, [](Twin& x) -> const Tensor& { return x.g.tensor; });
      };

      gt.upload(g);
      both([&](Backend& be, auto of) { be.swiglu(of(gt), of(ut), of(out)); });
      log.check("swiglu", "", out.g.download(), out.c.download(), 1e-5);
      both([&](Backend& be, auto of) { be.swiglu(of(gt), of(ut), of(gt)); });  // out aliases gate
      log.check("swiglu in place", "", gt.g.download(), gt.c.download(), 1e-5);

      gt.upload(g);
      both([&](Backend& be, auto of) { be.geglu(of(gt), of(ut), of(out)); });
      log.check("geglu", "", out.g.download(), out.c.download(), 1e-5);
      both([&](Backend& be, auto of) { be.geglu(of(gt), of(ut), of(gt)); });
      log.check("geglu in place", "", gt.g.download(), gt.c.download(), 1e-5);

      gt.upload(g);
      both([&](Backend& be, auto of) { be.add(of(gt), of(ut), of(out)); });
      log.check("add", "", out.g.download(), out.c.download(), 0.0);
      both([&](Backend& be, auto of) { be.add(of(gt), of(ut), of(ut)); });  // out aliases b
      log.check("add in place", "", ut.g.download(), ut.c.download(), 0.0);

      both([&](Backend& be, auto of) { be.mul(of(gt), of(ut), of(out)); });
      log.check("mul", "", out.g.download(), out.c.download(), 0.0);
      both([&](Backend& be, auto of) { be.mul(of(gt), of(ut), of(ut)); });  // out aliases b
      log.check("mul in place", "", ut.g.download(), ut.c.download(), 0.0);
      ut.upload(u);

      both([&](Backend& be, auto of) { be.scale(of(gt), 0.37f, of(out)); });
      log.check("scale", "", out.g.download(), out.c.download(), 0.0);
      both([&](Backend& be, auto of) { be.scale(of(gt), -1.7f, of(gt)); });
      log.check("scale in place", "", gt.g.download(), gt.c.download(), 0.0);

      // softmax: wide logits, some masked (-inf) entries, the first row fully masked
      // (the CPU gives zeros there, not NaN).
      std::vector<float> logits = random_floats(rng, n, -30.0f, 30.0f);
      for (size_t i = 0; i < n; i += 5) logits[i] = -INFINITY;
      if (t > 1)
        for (int64_t c = 0; c < d; ++c) logits[size_t(c)] = -INFINITY;
      gt.upload(logits);
      both([&](Backend& be, auto of) { be.softmax(of(gt), of(out)); });
      log.check("softmax", "", out.g.download(), out.c.download(), 1e-5);
      both([&](Backend& be, auto of) { be.softmax(of(gt), of(gt)); });
      log.check("softmax in place", "", gt.g.download(), gt.c.download(), 1e-5);

      CHECK(gt.g.padding_intact());
      CHECK(ut.g.padding_intact());
      CHECK(out.g.padding_intact());
    }
  }
}

TEST_CASE("cuda parity: transpose of tile-sized, ragged and strided matrices") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA transpose parity");
  std::mt19937 rng(6);
  for (auto [r, c] : {std::pair<int64_t, int64_t>{1, 1536}, {1536, 1}, {37, 100}, {64, 32}, {301, 1536}}) {
    for (int64_t pad : {0, 3}) {
      CAPTURE(r);
      CAPTURE(c);
      CAPTURE(pad);
      Twin x(b, DType::F32, {r, c}, pad), out(b, DType::F32, {c, r}, pad);
      x.upload(random_floats(rng, size_t(r * c)));
      out.upload(std::vector<float>(size_t(r * c), 0.0f));
      b.cpu->transpose(x.c.tensor, out.c.tensor);
      b.gpu->transpose(x.g.tensor, out.g.tensor);
      log.check("transpose", "", out.g.download(), out.c.download(), 0.0);
      CHECK(out.g.padding_intact());
    }
  }
}

TEST_CASE("cuda parity: rope (normal, neox, partial rotation, linear and llama3 scaling)") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA rope parity (normalized; the check is the per-element angle bound)");
  std::mt19937 rng(6);
  for (const RopeParams& p : rope_variants()) {
    for (auto [t, heads, hd] : {std::tuple<int64_t, int64_t, int64_t>{37, 4, 64}, {1, 3, 64}, {9, 2, 128}, {5, 8, 256}}) {
      if (p.num_rotated > hd) continue;
      const std::string what = rope_name(p) + " T=" + std::to_string(t) + " hd=" + std::to_string(hd);
      CAPTURE(what);
      const auto xv = random_floats(rng, size_t(t * heads * hd), -2.0f, 2.0f);
      const auto pos = rope_positions(rng, t);
      Twin x(b, DType::F32, {t, heads, hd}), pt(b, DType::I32, {t});
      x.upload(xv);
      pt.upload(pos);
      b.cpu->rope(x.c.tensor, pt.c.tensor, p);
      b.gpu->rope(x.g.tensor, pt.g.tensor, p);
      const auto gpu = x.g.download(), cpu = x.c.download();
      check_elementwise_bound(what, gpu, cpu, rope_bounds(xv, pos, heads, hd, p));
      log.record("rope " + rope_name(p), normalized_error(gpu, cpu), -1);
    }
  }
}

TEST_CASE("cuda parity: write_kv into F32 and F16 caches, negative slots skipped") {
  Backends b = backends_or_skip();
  if (!b) return;
  std::mt19937 rng(7);
  const int64_t kv_heads = 2, hd = 64, blocks = 6, block_size = 16;
  for (DType cache_dtype : {DType::F32, DType::F16}) {
    CAPTURE(dtype_name(cache_dtype));
    const int64_t cache_elems = blocks * block_size * kv_heads * hd;
    Twin kc(b, cache_dtype, {blocks, block_size, kv_heads, hd}), vc(b, cache_dtype, {blocks, block_size, kv_heads, hd});
    kc.upload_bytes(cache_bytes(random_floats(rng, size_t(cache_elems)), cache_dtype));
    vc.upload_bytes(cache_bytes(random_floats(rng, size_t(cache_elems)), cache_dtype));
    for (int64_t t : {1, 7, 40}) {
      CAPTURE(t);
      std::vector<int32_t> slots(size_t(blocks * block_size));
      std::iota(slots.begin(), slots.end(), 0);
      std::shuffle(slots.begin(), slots.end(), rng);
      slots.resize(size_t(t));
      if (t > 1) slots[1] = -1;  // a padding row
      Twin k(b, DType::F32, {t, kv_heads, hd}), v(b, DType::F32, {t, kv_heads, hd}), st(b, DType::I32, {t});
      k.upload(random_floats(rng, size_t(t * kv_heads * hd), -3.0f, 3.0f));
      v.upload(random_floats(rng, size_t(t * kv_heads * hd), -3.0f, 3.0f));
      st.upload(slots);
      b.cpu->write_kv(k.c.tensor, v.c.tensor, cpu_cache(kc, vc), st.c.tensor);
      b.gpu->write_kv(k.g.tensor, v.g.tensor, gpu_cache(kc, vc), st.g.tensor);
      CHECK(kc.g.download<std::byte>() == kc.c.download<std::byte>());
      CHECK(vc.g.download<std::byte>() == vc.c.download<std::byte>());
    }
  }
}

}  // namespace sluice::backends::test
