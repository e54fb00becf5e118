// Op parity of the CUDA backend against the CPU backend (the idea of GGML's
// test-backend-ops): every op of backends/backend.h runs on the same random
// inputs (fixed seeds) on both backends, tensors allocated on each with
// allocate + upload (weights with wrap_weights), results downloaded and compared.
// Only the public interface is used (backend_factory.h), so this file compiles in
// every build; each TEST_CASE starts by getting the CUDA backend or skipping with a
// MESSAGE ("built without CUDA", "no CUDA device (cudaErrorNoDevice ...)").
//
// Error measure (backend_test_util.h): normalized error = max|gpu - cpu| /
// max(1, max|cpu|) over the compared tensor. Tolerances, and why:
//   upload/download/fill_zero/copy, write_kv (F32 and F16 cache), embed of
//     F32/F16/BF16 tables, add, scale            exact: copies, or one correctly
//                                                rounded IEEE operation per element
//                                                (F16 conversion rounds to nearest even
//                                                on both), no flush-to-zero in the build.
//   embed of quantized tables                    1e-6: a dequantized value is one or
//                                                two F32 operations (d * q - m); the GPU
//                                                may contract them into an FMA, one
//                                                rounding apart (<= 2^-23 relative).
//   rms_norm, layer_norm, add_rms_norm (normed)  1e-5: the sum of d squares in another
//                                                order; the CPU's 16-lane sum is within
//                                                (d/16 + 6) 2^-24 <= 1.6e-5 relative of
//                                                exact for d <= 4096 worst case, typically
//                                                ~1e-7, and the square root halves it.
//   swiglu, geglu, softmax                       1e-5: expf / tanhf differ by a few ulp
//                                                between libm and CUDA's full-precision
//                                                functions; approximate intrinsics
//                                                (__expf, tanh.approx: ~2^-11) would fail,
//                                                as they should for parity.
//   rope, rope_write_kv (q, k, F32 cache)        per element, not normalized: both
//                                                backends round the angle pos * inv_freq
//                                                to F32, so each is within
//                                                (|a|+|b|)(|angle| 2^-22 + 2^-21) of the
//                                                exact rotation (what test_rope.cpp
//                                                requires of the CPU); the GPU may differ
//                                                from the CPU by the sum of both bounds.
//                                                Positions go up to 4096, where 1 ulp of
//                                                the angle is ~5e-4 rad: a normalized 1e-5
//                                                would demand bit-identical angle
//                                                arithmetic, which the interface does not.
//   matmul, gated_mlp                            per element: |gpu - cpu| <= (u + (in+8) 2^-24)
//                                                * sum_k |w_k x_k| (+ F16 subnormal slack)
//                                                + the CPU's own bound, where u is what the
//                                                GPU may round operands to before an F32
//                                                accumulation: 0 for F32 weights (no TF32),
//                                                2^-11 for F16 (x to F16), 2^-8 for BF16
//                                                (x to BF16), 2^-10 for quantized weights
//                                                (x and the dequantized w to F16 each, the
//                                                large-T tensor-core path). A worst-case
//                                                bound: any correct kernel meets it, a wrong
//                                                scale, block or row misses it by orders.
//                                                Plus a normalized bound (F32 1e-4; F16 and
//                                                quantized 3e-3; BF16 1e-2; gated_mlp 1.5x)
//                                                for rounding that is merely too coarse,
//                                                ~6x what emulating the 16-bit roundings
//                                                on the CPU measures.
//   attention                                    1e-4: outputs are convex combinations of
//                                                v in [-1, 1] (so absolute); q.k sums up to
//                                                256 products in another order and the
//                                                online softmax rescales; both stay ~1e-6,
//                                                F16 caches are read identically. A q or p
//                                                rounded to F16 (~5e-4) would fail, as it
//                                                should.
//   recorded-step chains (replay test)           1e-2 / 3e-2 (see that test).
// A worst-error summary per op is printed (MESSAGE) so a GPU run shows the headroom.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/dequantize.h"
#include "tests/unit/backends/backend_test_util.h"

namespace sluice::backends::test {
namespace {

struct Backends {
  std::unique_ptr<Backend> gpu;
  std::unique_ptr<Backend> cpu;
  explicit operator bool() const { return gpu != nullptr; }
};

// The CUDA backend and a CPU backend, or empty after the skip MESSAGE.
Backends backends_or_skip() {
  Backends b;
  b.gpu = cuda_backend_or_skip("CUDA op parity");
  if (b.gpu) b.cpu = make_cpu_backend(0);
  return b;
}

// One tensor on both backends, same shape, same contents.
struct Twin {
  BackendTensor c, g;
  Twin(Backends& b, DType dtype, const std::vector<int64_t>& shape, int64_t pad = 0)
      : c(*b.cpu, dtype, shape, pad), g(*b.gpu, dtype, shape, pad) {}
  template <class T>
  void upload(const std::vector<T>& values) {
    c.upload(values);
    g.upload(values);
  }
  void upload_bytes(const std::vector<std::byte>& bytes) {
    c.upload_bytes(bytes);
    g.upload_bytes(bytes);
  }
};

struct TwinWeights {
  BackendWeights c, g;
  TwinWeights(Backends& b, const std::vector<std::byte>& bytes, DType dtype, const std::vector<int64_t>& shape)
      : c(*b.cpu, bytes, dtype, shape), g(*b.gpu, bytes, dtype, shape) {}
};

KvLayer cpu_cache(const Twin& k, const Twin& v) { return {k.c.tensor, v.c.tensor}; }
KvLayer gpu_cache(const Twin& k, const Twin& v) { return {k.g.tensor, v.g.tensor}; }

// Rows [begin, begin + count) of a [rows, row_elems] host vector.
std::vector<float> host_rows(const std::vector<float>& v, int64_t begin, int64_t count, int64_t row_elems) {
  return {v.begin() + begin * row_elems, v.begin() + (begin + count) * row_elems};
}

// A cache's bytes made from F32 values, as F32 or F16.
std::vector<std::byte> cache_bytes(const std::vector<float>& values, DType dtype) {
  std::vector<std::byte> out(values.size() * (dtype == DType::F32 ? 4 : 2));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&out[i * 4], &values[i], 4);
    } else {
      const uint16_t h = cpu::fp32_to_fp16(values[i]);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

std::vector<float> cache_values(const std::vector<std::byte>& bytes, DType dtype) {
  std::vector<float> out(bytes.size() / (dtype == DType::F32 ? 4 : 2));
  for (size_t i = 0; i < out.size(); ++i) {
    if (dtype == DType::F32) {
      std::memcpy(&out[i], &bytes[i * 4], 4);
    } else {
      uint16_t h;
      std::memcpy(&h, &bytes[i * 2], 2);
      out[i] = cpu::fp16_to_fp32(h);
    }
  }
  return out;
}

// --- matmul bound -------------------------------------------------------------------

// Unit roundoff of what the GPU may round x and w to before an F32 accumulation.
double gpu_operand_rounding(DType w) {
  switch (w) {
    case DType::F32: return 0.0;                     // SGEMM, no TF32
    case DType::F16: return 0x1p-11;                 // x to F16
    case DType::BF16: return 0x1p-8;                 // x to BF16
    default: return 0x1p-11 + 0x1p-11;               // x and dequantized w to F16
  }
}

// The normalized error allowed on top of the per-element bound, which is a worst
// case and so cannot see rounding that is merely larger than it should be: F32
// 1e-4 (the F32 summation order; ~1e-6 expected); F16 and quantized weights 3e-3,
// BF16 1e-2 (what rounding x, and a quantized w, to 16 bits gives: measured
// 2.5e-4 (F16), <= 5e-4 (quantized), 1.7e-3 (BF16) with those roundings emulated
// on the CPU over these shapes, so ~6x headroom). gated_mlp multiplies two such
// results: 1.5x these.
double matmul_normalized_tolerance(DType w) {
  switch (w) {
    case DType::F32: return 1e-4;
    case DType::BF16: return 1e-2;
    default: return 3e-3;
  }
}

// Host facts about x [T, in] and dequantized w [out, in] that size the bound.
struct DotSums {
  int64_t t = 0, out = 0, in = 0;
  std::vector<double> abs_products;  // [T, out]: sum_k |w_k x_k|
  std::vector<double> w_abs;         // [out]: sum_k |w_k|
  std::vector<double> x_abs;         // [T]: sum_k |x_k|
};

DotSums dot_sums(const std::vector<float>& x, const std::vector<float>& w, int64_t t, int64_t out, int64_t in) {
  DotSums s{t, out, in, std::vector<double>(size_t(t * out)), std::vector<double>(size_t(out)),
            std::vector<double>(size_t(t))};
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < in; ++k) s.w_abs[size_t(o)] += std::fabs(w[size_t(o * in + k)]);
  for (int64_t r = 0; r < t; ++r) {
    const float* xr = &x[size_t(r * in)];
    for (int64_t k = 0; k < in; ++k) s.x_abs[size_t(r)] += std::fabs(xr[k]);
    for (int64_t o = 0; o < out; ++o) {
      const float* wr = &w[size_t(o * in)];
      double sum = 0;
      for (int64_t k = 0; k < in; ++k) sum += std::fabs(double(wr[k]) * xr[k]);
      s.abs_products[size_t(r * out + o)] = sum;
    }
  }
  return s;
}

// The largest |gpu - cpu| allowed for y[r][o] (see the header comment).
double matmul_bound(DType dtype, const DotSums& s, int64_t r, int64_t o) {
  const double u = gpu_operand_rounding(dtype);
  const double products = s.abs_products[size_t(r * s.out + o)];
  const double accumulate = (double(s.in) + 8.0) * 0x1p-24;
  // F16 subnormals (|v| < 2^-14) round to a multiple of 2^-24, not relatively.
  const double subnormal = u > 0 ? 0x1p-24 * (s.w_abs[size_t(o)] + s.x_abs[size_t(r)]) : 0.0;
  return (u + accumulate) * products + subnormal + dot_error_bound(s.in, products);
}

std::vector<float> dequantized(DType dtype, const std::vector<std::byte>& bytes, int64_t rows, int64_t cols) {
  std::vector<float> w(size_t(rows * cols));
  const size_t row_bytes = *dtype_bytes(dtype, uint64_t(cols));
  for (int64_t r = 0; r < rows; ++r) cpu::dequantize_row(dtype, bytes.data() + size_t(r) * row_bytes, &w[size_t(r * cols)], cols);
  return w;
}

// Checks every element of a matmul result against matmul_bound.
void check_matmul(const std::string& what, DType dtype, const DotSums& sums, const std::vector<float>& gpu,
                    const std::vector<float>& cpu) {
  REQUIRE(gpu.size() == cpu.size());
  int failures = 0;
  for (int64_t r = 0; r < sums.t; ++r)
    for (int64_t o = 0; o < sums.out; ++o) {
      const size_t i = size_t(r * sums.out + o);
      const double bound = matmul_bound(dtype, sums, r, o);
      const double diff = std::fabs(double(gpu[i]) - cpu[i]);
      if (!(diff <= bound) && failures++ < 3) {
        INFO(what << ": row " << r << " out " << o << " gpu " << gpu[i] << " cpu " << cpu[i] << " |diff| " << diff
                  << " > bound " << bound << " (sum |w x| " << sums.abs_products[i] << ")");
        CHECK(diff <= bound);
      }
    }
  CHECK_MESSAGE(failures == 0, what << ": " << failures << " elements over the bound");
}

// --- rope bound ----------------------------------------------------------------------

double rope_inv_freq(const RopeParams& p, int n, int j) {
  double inv = std::pow(double(p.theta), -2.0 * j / n);
  if (p.llama3_factor > 0) {
    const double wavelen = 2 * std::numbers::pi / inv;
    const double ctx = p.llama3_original_context;
    if (wavelen > ctx / p.llama3_low_freq_factor) {
      inv /= p.llama3_factor;
    } else if (wavelen >= ctx / p.llama3_high_freq_factor) {
      const double s = (ctx / wavelen - p.llama3_low_freq_factor) / (p.llama3_high_freq_factor - p.llama3_low_freq_factor);
      inv = (1 - s) * inv / p.llama3_factor + s * inv;
    }
  }
  return inv * p.freq_scale;
}

// Per-element allowed |gpu - cpu| for x [T, heads, hd] rotated from `input`
// (0 for the elements that do not rotate).
std::vector<double> rope_bounds(const std::vector<float>& input, const std::vector<int32_t>& positions, int64_t heads,
                                int64_t hd, const RopeParams& p) {
  const int n = p.num_rotated ? p.num_rotated : int(hd);
  const int64_t t = int64_t(positions.size());
  std::vector<double> bound(input.size(), 0.0);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      const size_t base = size_t((i * heads + h) * hd);
      for (int j = 0; j < n / 2; ++j) {
        const size_t ia = base + size_t(p.neox ? j : 2 * j), ib = base + size_t(p.neox ? j + n / 2 : 2 * j + 1);
        const double angle = std::fabs(double(positions[size_t(i)]) * rope_inv_freq(p, n, j));
        const double b = (std::fabs(input[ia]) + std::fabs(input[ib])) * (angle * 0x1p-21 + 0x1p-20);
        bound[ia] = bound[ib] = b;
      }
    }
  return bound;
}

void check_elementwise_bound(const std::string& what, const std::vector<float>& gpu, const std::vector<float>& cpu,
                             const std::vector<double>& bound) {
  REQUIRE(gpu.size() == cpu.size());
  REQUIRE(bound.size() == cpu.size());
  int failures = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const double diff = std::fabs(double(gpu[i]) - cpu[i]);
    if (!(diff <= bound[i]) && failures++ < 3) {
      INFO(what << ": element " << i << " gpu " << gpu[i] << " cpu " << cpu[i] << " |diff| " << diff << " > "
                << bound[i]);
      CHECK(diff <= bound[i]);
    }
  }
  CHECK_MESSAGE(failures == 0, what << ": " << failures << " elements over the bound");
}

std::vector<RopeParams> rope_variants() {
  std::vector<RopeParams> v;
  for (bool neox : {false, true}) {
    RopeParams p;
    p.neox = neox;
    v.push_back(p);  // plain, theta 1e4
    p.theta = 1000000.0f;
    v.push_back(p);
    RopeParams partial;
    partial.neox = neox;
    partial.num_rotated = 32;  // of head_dim 64: the rest passes through
    partial.freq_scale = 0.25f;
    v.push_back(partial);
    RopeParams llama3;
    llama3.neox = neox;
    llama3.theta = 500000.0f;
    llama3.llama3_factor = 8.0f;
    llama3.llama3_low_freq_factor = 1.0f;
    llama3.llama3_high_freq_factor = 4.0f;
    llama3.llama3_original_context = 8192;
    v.push_back(llama3);
  }
  return v;
}

std::string rope_name(const RopeParams& p) {
  std::string s = p.neox ? "neox" : "normal";
  if (p.num_rotated) s += " partial " + std::to_string(p.num_rotated);
  if (p.freq_scale != 1.0f) s += " freq_scale " + std::to_string(p.freq_scale);
  if (p.llama3_factor > 0) s += " llama3";
  s += " theta " + std::to_string(int64_t(p.theta));
  return s;
}

std::vector<int32_t> rope_positions(std::mt19937& rng, int64_t t) {
  std::vector<int32_t> pos = random_ints(rng, size_t(t), 0, 4095);
  pos[0] = 0;
  if (t > 1) pos[1] = 4095;
  return pos;
}

}  // namespace

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

TEST_CASE("cuda parity: swiglu, geglu, add, scale, softmax") {
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
