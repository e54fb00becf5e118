// Op parity of the CUDA backend against the CPU backend (the idea of GGML's
// test-backend-ops): every op of backends/backend.h runs on the same random
// inputs (fixed seeds) on both backends, tensors allocated on each with
// allocate + upload (weights with wrap_weights), results downloaded and compared.
// Only the public interface is used (backend_factory.h), so this file compiles in
// every build; each TEST_CASE starts by getting the CUDA backend or skipping with a
// MESSAGE ("built without CUDA", "no CUDA device (cudaErrorNoDevice ...)").
//
// This file: paged attention, padded steps and recorded-step replays. Tolerances: cuda_parity_util.h.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tests/unit/backends/cuda/cuda_parity_util.h"

namespace sluice::backends::test::unit_backends_cuda_test_cuda_parity_steps {

TEST_CASE("cuda parity: paged attention (prefill chunks + decode rows, GQA 1..8, head_dim 64..256, window, softcap)") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA attention parity");
  std::mt19937 rng(8);
  struct HeadShape {
    int64_t hd, kv_heads, group;
  };
  std::vector<HeadShape> head_shapes;
  for (int64_t g = 1; g <= 8; ++g) head_shapes.push_back({64, 2, g});
  for (HeadShape h : {HeadShape{96, 2, 3}, {128, 4, 1}, {128, 2, 4}, {128, 1, 8}, {256, 2, 1}, {256, 1, 2}, {256, 1, 8}})
    head_shapes.push_back(h);
  // (num_cached, num_queries) in batch order: a long decode row, a prefill chunk
  // after a cached prefix, a first token, a fresh 70-token prefill, more decode rows,
  // a short chunk.
  const std::vector<std::pair<int32_t, int32_t>> shapes = {{300, 1}, {37, 20}, {0, 1}, {0, 70}, {129, 1}, {5, 3}, {16, 16}};
  int config = 0;
  for (DType cache_dtype : {DType::F32, DType::F16}) {
    for (const HeadShape hs : head_shapes) {
      for (auto [window, softcap] : {std::pair<int32_t, float>{0, 0.0f}, {7, 0.0f}, {0, 30.0f}, {7, 30.0f}}) {
        const int64_t block_size = std::array<int64_t, 3>{16, 4, 32}[size_t(config++ % 3)];
        const int64_t heads = hs.kv_heads * hs.group, hd = hs.hd, kvh = hs.kv_heads;
        const std::string what = std::string(dtype_name(cache_dtype)) + " hd=" + std::to_string(hd) +
                                 " kv_heads=" + std::to_string(kvh) + " group=" + std::to_string(hs.group) +
                                 " block=" + std::to_string(block_size) + " window=" + std::to_string(window) +
                                 " softcap=" + std::to_string(softcap);
        CAPTURE(what);
        int64_t needed = 0;
        for (auto [c, q] : shapes) needed += (c + q + block_size - 1) / block_size;
        const int64_t num_blocks = needed + 5;
        std::vector<int32_t> free_blocks(static_cast<size_t>(num_blocks));
        std::iota(free_blocks.begin(), free_blocks.end(), 0);
        std::shuffle(free_blocks.begin(), free_blocks.end(), rng);

        std::vector<SequenceSlice> slices;
        std::vector<int32_t> slots;  // every token of every sequence, for write_kv
        int32_t row = 0;
        for (auto [cached, queries] : shapes) {
          SequenceSlice s{row, queries, cached, {}};
          for (int64_t p = 0; p < cached + queries; p += block_size) {
            s.block_table.push_back(free_blocks.back());
            free_blocks.pop_back();
          }
          for (int32_t p = 0; p < cached + queries; ++p)
            slots.push_back(s.block_table[size_t(p / block_size)] * int32_t(block_size) + p % int32_t(block_size));
          row += queries;
          slices.push_back(std::move(s));
        }
        const int64_t t = row, all = int64_t(slots.size());
        Twin kc(b, cache_dtype, {num_blocks, block_size, kvh, hd}), vc(b, cache_dtype, {num_blocks, block_size, kvh, hd});
        Twin k(b, DType::F32, {all, kvh, hd}), v(b, DType::F32, {all, kvh, hd}), st(b, DType::I32, {all});
        Twin q(b, DType::F32, {t, heads, hd}), out(b, DType::F32, {t, heads, hd});
        kc.upload_bytes(std::vector<std::byte>(size_t(kc.c.tensor.num_bytes())));
        vc.upload_bytes(std::vector<std::byte>(size_t(vc.c.tensor.num_bytes())));
        k.upload(random_floats(rng, size_t(all * kvh * hd)));
        v.upload(random_floats(rng, size_t(all * kvh * hd)));
        st.upload(slots);
        q.upload(random_floats(rng, size_t(t * heads * hd)));
        AttentionParams params;
        params.scale = 3.0f / std::sqrt(float(hd));  // sharper than usual
        params.sliding_window = window;
        params.softcap = softcap;
        for (Backend* be : {b.cpu.get(), b.gpu.get()}) {
          const bool g = be == b.gpu.get();
          be->begin_step(slices, t);
          be->write_kv(g ? k.g.tensor : k.c.tensor, g ? v.g.tensor : v.c.tensor,
                       g ? gpu_cache(kc, vc) : cpu_cache(kc, vc), g ? st.g.tensor : st.c.tensor);
          be->attention(g ? q.g.tensor : q.c.tensor, g ? gpu_cache(kc, vc) : cpu_cache(kc, vc), slices, params,
                        g ? out.g.tensor : out.c.tensor);
        }
        log.check(std::string("attention ") + std::string(dtype_name(cache_dtype)) + " hd=" + std::to_string(hd), what,
                  out.g.download(), out.c.download(), 1e-4);
      }
    }
  }
}

// The kernel takes one of two launch shapes by the step's row count: a few rows split
// each row's keys across many warps with a combine pass (decode), many rows take one
// block per row and KV head. Both merge the same splits in the same order, so a row's
// result must be the same bits in either: a decode row alone (split launch) and the same
// row after a 300-row prefill (block launch), at contexts of 1 to 1100 keys.
TEST_CASE("cuda attention: a row gives the same bits alone and in a large step") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA attention, split vs block launch");
  std::mt19937 rng(12);
  struct Shape {
    int64_t hd, kv_heads, group;
  };
  for (DType cache_dtype : {DType::F16, DType::F32}) {
    for (const Shape sh : {Shape{128, 2, 4}, Shape{64, 2, 8}, Shape{256, 2, 1}}) {
      for (const int32_t cached : {0, 31, 32, 700, 1100}) {
        const int64_t heads = sh.kv_heads * sh.group, hd = sh.hd, kvh = sh.kv_heads, block_size = 16;
        const int32_t prefill = 300;
        const std::string what = std::string(dtype_name(cache_dtype)) + " hd=" + std::to_string(hd) +
                                 " group=" + std::to_string(sh.group) + " cached=" + std::to_string(cached);
        CAPTURE(what);
        const int64_t decode_blocks = (cached + 1 + block_size - 1) / block_size;
        const int64_t prefill_blocks = (prefill + block_size - 1) / block_size;
        const int64_t num_blocks = decode_blocks + prefill_blocks;
        std::vector<int32_t> decode_table(static_cast<size_t>(decode_blocks)), prefill_table(static_cast<size_t>(prefill_blocks));
        std::iota(decode_table.begin(), decode_table.end(), 0);
        std::iota(prefill_table.begin(), prefill_table.end(), int32_t(decode_blocks));
        const int64_t slots_total = num_blocks * block_size;
        const auto k_init = cache_bytes(random_floats(rng, size_t(slots_total * kvh * hd)), cache_dtype);
        const auto v_init = cache_bytes(random_floats(rng, size_t(slots_total * kvh * hd)), cache_dtype);
        Twin kc(b, cache_dtype, {num_blocks, block_size, kvh, hd}), vc(b, cache_dtype, {num_blocks, block_size, kvh, hd});
        kc.upload_bytes(k_init);
        vc.upload_bytes(v_init);
        const auto q_decode = random_floats(rng, size_t(heads * hd));
        const auto q_prefill = random_floats(rng, size_t(prefill * heads * hd));
        AttentionParams params;
        params.scale = 3.0f / std::sqrt(float(hd));

        // Alone: one row.
        const std::vector<SequenceSlice> alone = {{0, 1, cached, decode_table}};
        Twin q1(b, DType::F32, {1, heads, hd}), out1(b, DType::F32, {1, heads, hd});
        q1.upload(q_decode);
        // In a large step: the prefill's rows first, the decode row last.
        const std::vector<SequenceSlice> large = {{0, prefill, 0, prefill_table}, {prefill, 1, cached, decode_table}};
        std::vector<float> q_all = q_prefill;
        q_all.insert(q_all.end(), q_decode.begin(), q_decode.end());
        Twin q2(b, DType::F32, {prefill + 1, heads, hd}), out2(b, DType::F32, {prefill + 1, heads, hd});
        q2.upload(q_all);
        for (Backend* be : {b.cpu.get(), b.gpu.get()}) {
          const bool g = be == b.gpu.get();
          const KvLayer cache = g ? gpu_cache(kc, vc) : cpu_cache(kc, vc);
          be->begin_step(alone, 1);
          be->attention(g ? q1.g.tensor : q1.c.tensor, cache, alone, params, g ? out1.g.tensor : out1.c.tensor);
          be->begin_step(large, prefill + 1);
          be->attention(g ? q2.g.tensor : q2.c.tensor, cache, large, params, g ? out2.g.tensor : out2.c.tensor);
        }
        const auto alone_gpu = out1.g.download();
        const auto large_gpu = out2.g.download();
        const auto in_large = host_rows(large_gpu, prefill, 1, heads * hd);
        CHECK(std::memcmp(alone_gpu.data(), in_large.data(), alone_gpu.size() * sizeof(float)) == 0);
        log.check("attention alone (split launch)", what, alone_gpu, out1.c.download(), 1e-4);
        log.check("attention in a large step (block launch)", what, large_gpu, out2.c.download(), 1e-4);
      }
    }
  }
}

TEST_CASE("cuda parity: begin_step with padding rows beyond the sequences") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA padded-step parity");
  std::mt19937 rng(10);
  const int64_t heads = 6, kvh = 2, hd = 64, block_size = 16, blocks = 8;
  for (DType cache_dtype : {DType::F32, DType::F16}) {
    CAPTURE(dtype_name(cache_dtype));
    // A prefill chunk, a decode row, a first token; then 3 padding rows.
    const std::vector<SequenceSlice> seqs = {{0, 3, 10, {5, 2}}, {3, 1, 20, {7, 0}}, {4, 1, 0, {3}}};
    const int64_t real = 5, rows = 8;
    std::vector<int32_t> pos, slots;
    for (const auto& s : seqs)
      for (int32_t i = 0; i < s.num_queries; ++i) {
        const int32_t p = s.num_cached + i;
        pos.push_back(p);
        slots.push_back(s.block_table[size_t(p / block_size)] * int32_t(block_size) + p % int32_t(block_size));
      }
    for (int64_t i = real; i < rows; ++i) pos.push_back(0), slots.push_back(-1);
    const int64_t cache_elems = blocks * block_size * kvh * hd;
    const auto k_init = cache_bytes(random_floats(rng, size_t(cache_elems)), cache_dtype);
    const auto v_init = cache_bytes(random_floats(rng, size_t(cache_elems)), cache_dtype);
    Twin q(b, DType::F32, {rows, heads, hd}), k(b, DType::F32, {rows, kvh, hd}), v(b, DType::F32, {rows, kvh, hd});
    Twin pt(b, DType::I32, {rows}), st(b, DType::I32, {rows}), out(b, DType::F32, {rows, heads, hd});
    Twin kc(b, cache_dtype, {blocks, block_size, kvh, hd}), vc(b, cache_dtype, {blocks, block_size, kvh, hd});
    q.upload(random_floats(rng, size_t(rows * heads * hd)));
    k.upload(random_floats(rng, size_t(rows * kvh * hd)));
    v.upload(random_floats(rng, size_t(rows * kvh * hd)));
    pt.upload(pos);
    st.upload(slots);
    kc.upload_bytes(k_init);
    vc.upload_bytes(v_init);
    out.upload(std::vector<float>(size_t(rows * heads * hd), kPadValue));
    RopeParams rope;
    rope.neox = true;
    AttentionParams params;
    params.scale = 0.125f;
    for (Backend* be : {b.cpu.get(), b.gpu.get()}) {
      const bool g = be == b.gpu.get();
      auto of = [&](Twin& x) -> const Tensor& { return g ? x.g.tensor : x.c.tensor; };
      be->begin_step(seqs, rows);
      be->rope_write_kv(of(q), of(k), of(v), of(pt), rope, g ? gpu_cache(kc, vc) : cpu_cache(kc, vc), of(st));
      be->attention(of(q), g ? gpu_cache(kc, vc) : cpu_cache(kc, vc), seqs, params, of(out));
    }
    const auto gpu = out.g.download(), cpu = out.c.download();
    const int64_t row_elems = heads * hd;
    log.check("attention, real rows of a padded step", "", host_rows(gpu, 0, real, row_elems),
              host_rows(cpu, 0, real, row_elems), 1e-4);
    // Padding rows: ignored (left as they were) or written as zeros, never NaN or garbage.
    for (int64_t r = real; r < rows; ++r) {
      CAPTURE(r);
      const auto pad_row = host_rows(gpu, r, 1, row_elems);
      const bool untouched = std::all_of(pad_row.begin(), pad_row.end(), [](float x) { return x == kPadValue; });
      const bool zeros = std::all_of(pad_row.begin(), pad_row.end(), [](float x) { return x == 0.0f; });
      CHECK((untouched || zeros));
    }
    // The padding rows wrote nothing into the caches.
    CHECK(vc.g.download<std::byte>() == vc.c.download<std::byte>());
    const auto kc_gpu = cache_values(kc.g.download<std::byte>(), cache_dtype);
    const auto kc_cpu = cache_values(kc.c.download<std::byte>(), cache_dtype);
    const auto k_before = cache_values(k_init, cache_dtype);
    const size_t row = size_t(kvh * hd);
    std::vector<bool> written(size_t(blocks * block_size), false);
    for (int32_t s : slots)
      if (s >= 0) written[size_t(s)] = true;
    for (size_t s = 0; s < written.size(); ++s) {
      if (written[s]) continue;
      CAPTURE(s);
      CHECK(std::equal(kc_gpu.begin() + long(s * row), kc_gpu.begin() + long((s + 1) * row), k_before.begin() + long(s * row),
                       [](float a, float c) { return std::memcmp(&a, &c, 4) == 0; }));
    }
    log.check("rope_write_kv k cache, padded step", "", kc_gpu, kc_cpu, 2e-3);
  }
}

// Recorded steps (CUDA graphs) replay with what is in device memory now: the same
// key run again after new inputs were uploaded (and begin_step got new sequences,
// with longer block tables) gives the new results, not the captured ones; and
// forget_recordings() followed by a new capture does too.
//
// The step is a small decoder layer (embed, rms_norm, q/k/v matmuls, rope_write_kv,
// attention, output matmul, add_rms_norm, gated_mlp), run on both backends by the
// same code (the CPU's run_recorded just runs it). Tolerances: 1e-2 on the attention
// output and 3e-2 on the MLP output (normalized): a chain of quantized GEMMs, each
// allowed 2^-10 of sum |w x| on the GPU, through a norm, attention and a gated
// product that squares magnitudes (with the GPU's 16-bit roundings emulated on the
// CPU at 16 rows: 6.7e-4 and 1.1e-3). A stale replay (old ids, positions, slots or
// block tables) changes the outputs by O(1), and the test checks that two steps'
// results are indeed that far apart, so these tolerances cannot hide one.
TEST_CASE("cuda parity: run_recorded replays read new inputs from device memory") {
  Backends b = backends_or_skip();
  if (!b) return;
  ErrorLog log("CUDA recorded-step parity");
  std::mt19937 rng(11);
  const int64_t vocab = 500, d = 256, heads = 4, kvh = 2, hd = 64, f = 512, block_size = 16, blocks = 64;
  const float eps = 1e-5f;
  const int64_t bucket = b.gpu->recorded_step_rows(3);
  const int64_t rows = bucket > 0 ? bucket : 3;
  if (bucket == 0) MESSAGE("the CUDA backend records no steps (recorded_step_rows(3) == 0): run_recorded runs directly");
  CHECK((bucket == 0 || bucket >= 3));
  CHECK(b.cpu->recorded_step_rows(3) == 0);

  struct Layer {
    BackendWeights table, wq, wk, wv, wo, wg, wu;
    BackendTensor norm1, norm2, ids, pos, slots, hidden, normed, q, k, v, attn, branch, scratch, mlp, kc, vc;
  };
  const auto table_b = random_weight_bytes(DType::Q8_0, vocab, d, rng);
  const auto wq_b = random_weight_bytes(DType::Q8_0, heads * hd, d, rng);
  const auto wk_b = random_weight_bytes(DType::Q8_0, kvh * hd, d, rng);
  const auto wv_b = random_weight_bytes(DType::Q8_0, kvh * hd, d, rng);
  const auto wo_b = random_weight_bytes(DType::F16, d, heads * hd, rng);
  const auto wg_b = random_weight_bytes(DType::Q4_K, f, d, rng);
  const auto wu_b = random_weight_bytes(DType::Q4_K, f, d, rng);
  const auto n1 = random_floats(rng, size_t(d), 0.5f, 1.5f), n2 = random_floats(rng, size_t(d), 0.5f, 1.5f);
  const auto kc_init = cache_bytes(random_floats(rng, size_t(blocks * block_size * kvh * hd)), DType::F16);
  const auto vc_init = cache_bytes(random_floats(rng, size_t(blocks * block_size * kvh * hd)), DType::F16);
  auto make_layer = [&](Backend& be) {
    Layer L{BackendWeights(be, table_b, DType::Q8_0, {vocab, d}),
            BackendWeights(be, wq_b, DType::Q8_0, {heads * hd, d}),
            BackendWeights(be, wk_b, DType::Q8_0, {kvh * hd, d}),
            BackendWeights(be, wv_b, DType::Q8_0, {kvh * hd, d}),
            BackendWeights(be, wo_b, DType::F16, {d, heads * hd}),
            BackendWeights(be, wg_b, DType::Q4_K, {f, d}),
            BackendWeights(be, wu_b, DType::Q4_K, {f, d}),
            BackendTensor(be, DType::F32, {d}),
            BackendTensor(be, DType::F32, {d}),
            BackendTensor(be, DType::I32, {rows}),
            BackendTensor(be, DType::I32, {rows}),
            BackendTensor(be, DType::I32, {rows}),
            BackendTensor(be, DType::F32, {rows, d}),
            BackendTensor(be, DType::F32, {rows, d}),
            BackendTensor(be, DType::F32, {rows, heads * hd}),
            BackendTensor(be, DType::F32, {rows, kvh * hd}),
            BackendTensor(be, DType::F32, {rows, kvh * hd}),
            BackendTensor(be, DType::F32, {rows, heads * hd}),
            BackendTensor(be, DType::F32, {rows, d}),
            BackendTensor(be, DType::F32, {rows, f}),
            BackendTensor(be, DType::F32, {rows, f}),
            BackendTensor(be, DType::F16, {blocks, block_size, kvh, hd}),
            BackendTensor(be, DType::F16, {blocks, block_size, kvh, hd})};
    L.norm1.upload(n1);
    L.norm2.upload(n2);
    L.kc.upload_bytes(kc_init);
    L.vc.upload_bytes(vc_init);
    return L;
  };
  Layer cl = make_layer(*b.cpu), gl = make_layer(*b.gpu);

  RopeParams rope;
  rope.neox = true;
  AttentionParams params;
  params.scale = 1.0f / 8.0f;
  std::vector<SequenceSlice> seqs;  // the current step's; the recorded ops read them only when captured
  auto run_step = [&](Backend& be, Layer& L, int64_t key) {
    be.begin_step(seqs, rows);
    be.run_recorded(key, [&] {
      const KvLayer cache{L.kc.tensor, L.vc.tensor};
      const Tensor q3 = L.q.tensor.reshape({rows, heads, hd}), k3 = L.k.tensor.reshape({rows, kvh, hd});
      const Tensor v3 = L.v.tensor.reshape({rows, kvh, hd}), attn3 = L.attn.tensor.reshape({rows, heads, hd});
      be.embed(L.table.tensor, L.ids.tensor, L.hidden.tensor);
      be.rms_norm(L.hidden.tensor, L.norm1.tensor, eps, L.normed.tensor);
      be.matmul(L.normed.tensor, L.wq.tensor, L.q.tensor);
      be.matmul(L.normed.tensor, L.wk.tensor, L.k.tensor);
      be.matmul(L.normed.tensor, L.wv.tensor, L.v.tensor);
      be.rope_write_kv(q3, k3, v3, L.pos.tensor, rope, cache, L.slots.tensor);
      be.attention(q3, cache, seqs, params, attn3);
      be.matmul(L.attn.tensor, L.wo.tensor, L.branch.tensor);
      be.add_rms_norm(L.hidden.tensor, L.branch.tensor, L.norm2.tensor, eps, L.normed.tensor);
      be.gated_mlp(L.normed.tensor, L.wg.tensor, L.wu.tensor, false, L.scratch.tensor, L.mlp.tensor);
    });
  };

  std::vector<int32_t> free_blocks(static_cast<size_t>(blocks));
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
  size_t next_block = 0;
  struct Result {
    std::vector<float> attn, mlp;
  };
  // One decode step of sequences with these cached lengths (fresh blocks each time,
  // so every step reads other cache rows), padded to `rows`, on both backends.
  auto step = [&](const std::vector<int32_t>& cached, int64_t key, const char* name) {
    REQUIRE(int64_t(cached.size()) <= rows);
    seqs.clear();
    std::vector<int32_t> ids, pos, slots;
    for (size_t i = 0; i < cached.size(); ++i) {
      SequenceSlice s{int32_t(i), 1, cached[i], {}};
      for (int64_t p = 0; p <= cached[i]; p += block_size) s.block_table.push_back(free_blocks[next_block++ % size_t(blocks)]);
      ids.push_back(int32_t(rng() % vocab));
      pos.push_back(cached[i]);
      slots.push_back(s.block_table.back() * int32_t(block_size) + cached[i] % int32_t(block_size));
      seqs.push_back(std::move(s));
    }
    for (int64_t i = int64_t(cached.size()); i < rows; ++i) ids.push_back(0), pos.push_back(0), slots.push_back(-1);
    for (Layer* L : {&cl, &gl}) {
      L->ids.upload(ids);
      L->pos.upload(pos);
      L->slots.upload(slots);
    }
    run_step(*b.cpu, cl, key);
    run_step(*b.gpu, gl, key);
    const int64_t real = int64_t(cached.size());
    Result gpu{host_rows(gl.attn.download(), 0, real, heads * hd), host_rows(gl.mlp.download(), 0, real, f)};
    Result cpu{host_rows(cl.attn.download(), 0, real, heads * hd), host_rows(cl.mlp.download(), 0, real, f)};
    log.check("attention output", name, gpu.attn, cpu.attn, 1e-2);
    log.check("mlp output", name, gpu.mlp, cpu.mlp, 3e-2);
    return std::pair{gpu, cpu};
  };

  const int64_t key = rows;
  const auto a = step({5, 17, 33}, key, "step A (captured)");
  // Longer block tables and other sequences under the same key: a replay.
  const auto bb = step({100, 47, 163}, key, "step B (replayed)");
  // The replay did not return step A's results: they are far apart.
  CHECK(normalized_error(bb.first.mlp, a.second.mlp) > 0.2);
  CHECK(normalized_error(bb.first.attn, a.second.attn) > 0.2);
  step({64, 3, 0}, key, "step C (replayed again)");
  // Fewer real rows, more padding, same recorded shape.
  step({30, 200}, key, "step D (two sequences, replayed)");
  b.gpu->forget_recordings();
  step({12, 90, 7}, key, "step E (recaptured after forget_recordings)");
  step({1, 2, 250}, key, "step F (replay of the new capture)");
  // The caches the steps wrote agree too (F16 both sides; a k value a GEMM ulp apart
  // may round to the neighbouring F16).
  log.check("k cache after the steps", "", cache_values(gl.kc.download<std::byte>(), DType::F16),
            cache_values(cl.kc.download<std::byte>(), DType::F16), 1e-2);
}

}  // namespace sluice::backends::test
