#pragma once
// Helpers for the CPU backend tests: host tensors filled from std::vectors,
// deterministic random data, and the F32 rounding bound of a dot product.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/half.h"
#include "backends/dtype.h"

namespace sluice::backends::test {

// A Buffer of `backend` holding one contiguous tensor.
struct HostTensor {
  std::unique_ptr<Buffer> buffer;
  Tensor tensor;

  HostTensor(Backend& backend, DType dtype, std::initializer_list<int64_t> shape) {
    Tensor probe = Tensor::make(nullptr, 0, dtype, shape);
    buffer = backend.allocate(probe.num_bytes());
    tensor = Tensor::make(buffer.get(), 0, dtype, shape);
  }
  template <class T>
  void set(Backend& backend, const std::vector<T>& values) {
    backend.upload(tensor, std::as_bytes(std::span(values)));
  }
  void set_bytes(Backend& backend, const std::vector<std::byte>& bytes) { backend.upload(tensor, bytes); }
  template <class T = float>
  std::vector<T> get(Backend& backend) const {
    std::vector<T> values(tensor.num_bytes() / sizeof(T));
    backend.download(tensor, std::as_writable_bytes(std::span(values)));
    return values;
  }
};

inline std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Worst-case error of an F32 dot of n terms summed as in dot.h (16 lanes of
// n/16 sequential adds, then a 4-level tree), relative to sum |a_i * b_i|:
// each product and each add rounds once, so (n/16 + 5) * 2^-24 to first order.
inline double dot_error_bound(int64_t n, double sum_abs) {
  return (static_cast<double>(n) / 16.0 + 6.0) * std::ldexp(1.0, -24) * sum_abs + 1e-30;
}

inline void put_half(std::vector<std::byte>& bytes, size_t at, float value) {
  const uint16_t h = cpu::fp32_to_fp16(value);
  bytes[at] = static_cast<std::byte>(h & 0xFF);
  bytes[at + 1] = static_cast<std::byte>(h >> 8);
}

// Random payload bits with tame, finite F16 scales in every block.
inline std::vector<std::byte> random_weights(DType dtype, int64_t rows, int64_t cols, std::mt19937& rng) {
  const auto& traits = dtype_traits(dtype);
  const size_t num_bytes = *dtype_bytes(dtype, static_cast<uint64_t>(rows * cols));
  std::vector<std::byte> bytes(num_bytes);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f), scale(0.001f, 0.05f);
  if (dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16) {
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float v = value(rng);
      if (dtype == DType::F32) {
        std::memcpy(&bytes[static_cast<size_t>(i) * 4], &v, 4);
      } else {
        const uint16_t h = dtype == DType::F16 ? cpu::fp32_to_fp16(v) : cpu::fp32_to_bf16(v);
        std::memcpy(&bytes[static_cast<size_t>(i) * 2], &h, 2);
      }
    }
    return bytes;
  }
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
  for (size_t at = 0; at < num_bytes; at += traits.block_bytes) {
    switch (dtype) {
      case DType::Q6_K: put_half(bytes, at + 208, scale(rng)); break;
      case DType::Q8_0:
      case DType::Q4_0:
      case DType::Q5_0: put_half(bytes, at, scale(rng)); break;
      default:  // Q4_1, Q5_1, Q4_K, Q5_K: d then min
        put_half(bytes, at, scale(rng));
        put_half(bytes, at + 2, scale(rng));
    }
  }
  return bytes;
}

inline bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace sluice::backends::test
