#pragma once
// Shared helpers of the CUDA op-parity tests (test_cuda_parity_*.cpp): the CUDA
// and CPU backends side by side, twin tensors, and the error bounds each op is
// held to.
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

struct Backends {
  std::unique_ptr<Backend> gpu;
  std::unique_ptr<Backend> cpu;
  explicit operator bool() const { return gpu != nullptr; }
};

// The CUDA backend and a CPU backend, or empty after the skip MESSAGE.
inline Backends backends_or_skip() {
  Backends b;
  b.gpu = cuda_backend_or_skip("CUDA op parity");
  if (b.gpu) b.cpu = make_reference_cpu_backend(0);
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

inline KvLayer cpu_cache(const Twin& k, const Twin& v) { return {k.c.tensor, v.c.tensor}; }
inline KvLayer gpu_cache(const Twin& k, const Twin& v) { return {k.g.tensor, v.g.tensor}; }

// Rows [begin, begin + count) of a [rows, row_elems] host vector.
inline std::vector<float> host_rows(const std::vector<float>& v, int64_t begin, int64_t count, int64_t row_elems) {
  return {v.begin() + begin * row_elems, v.begin() + (begin + count) * row_elems};
}

// A cache's bytes made from F32 values, as F32 or F16.
inline std::vector<std::byte> cache_bytes(const std::vector<float>& values, DType dtype) {
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

inline std::vector<float> cache_values(const std::vector<std::byte>& bytes, DType dtype) {
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
inline double gpu_operand_rounding(DType w) {
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
inline double matmul_normalized_tolerance(DType w) {
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

inline DotSums dot_sums(const std::vector<float>& x, const std::vector<float>& w, int64_t t, int64_t out, int64_t in) {
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
inline double matmul_bound(DType dtype, const DotSums& s, int64_t r, int64_t o) {
  const double u = gpu_operand_rounding(dtype);
  const double products = s.abs_products[size_t(r * s.out + o)];
  const double accumulate = (double(s.in) + 8.0) * 0x1p-24;
  // F16 subnormals (|v| < 2^-14) round to a multiple of 2^-24, not relatively.
  const double subnormal = u > 0 ? 0x1p-24 * (s.w_abs[size_t(o)] + s.x_abs[size_t(r)]) : 0.0;
  return (u + accumulate) * products + subnormal + dot_error_bound(s.in, products);
}

inline std::vector<float> dequantized(DType dtype, const std::vector<std::byte>& bytes, int64_t rows, int64_t cols) {
  std::vector<float> w(size_t(rows * cols));
  const size_t row_bytes = *dtype_bytes(dtype, uint64_t(cols));
  for (int64_t r = 0; r < rows; ++r) cpu::dequantize_row(dtype, bytes.data() + size_t(r) * row_bytes, &w[size_t(r * cols)], cols);
  return w;
}

// Checks every element of a matmul result against matmul_bound.
inline void check_matmul(const std::string& what, DType dtype, const DotSums& sums, const std::vector<float>& gpu,
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

inline double rope_inv_freq(const RopeParams& p, int n, int j) {
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
inline std::vector<double> rope_bounds(const std::vector<float>& input, const std::vector<int32_t>& positions, int64_t heads,
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

inline void check_elementwise_bound(const std::string& what, const std::vector<float>& gpu, const std::vector<float>& cpu,
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

inline std::vector<RopeParams> rope_variants() {
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

inline std::string rope_name(const RopeParams& p) {
  std::string s = p.neox ? "neox" : "normal";
  if (p.num_rotated) s += " partial " + std::to_string(p.num_rotated);
  if (p.freq_scale != 1.0f) s += " freq_scale " + std::to_string(p.freq_scale);
  if (p.llama3_factor > 0) s += " llama3";
  s += " theta " + std::to_string(int64_t(p.theta));
  return s;
}

inline std::vector<int32_t> rope_positions(std::mt19937& rng, int64_t t) {
  std::vector<int32_t> pos = random_ints(rng, size_t(t), 0, 4095);
  pos[0] = 0;
  if (t > 1) pos[1] = 4095;
  return pos;
}


}  // namespace sluice::backends::test
