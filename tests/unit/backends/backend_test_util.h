#pragma once
// Helpers for tests that run the same ops on more than one backend (the CPU
// backend and the CUDA backend through the public interface only): tensors on a
// given backend filled from host vectors (optionally with strided rows whose
// padding the ops must leave alone), random weights of every matmul dtype from a
// fixed seed, the normalized error measure, and "the CUDA backend, or a doctest
// MESSAGE saying why the test is skipped".
//
// No CUDA header is included: everything goes through backends/backend_factory.h,
// so these tests compile with g++ in every build and skip where there is no device.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "backends/backend_factory.h"
#include "backends/cpu/half.h"  // host-side F16/BF16 conversions for building weights
#include "tests/unit/backends/cpu/cpu_test_util.h"
#include "tests/unit/prerequisites.h"

namespace sluice::backends::test {

// The value written into the padding of strided rows: an op that writes there
// (or reads it as data) shows up as a mismatch.
inline constexpr float kPadValue = -12345.5f;

inline Tensor make_tensor(Buffer* buffer, DType dtype, const std::vector<int64_t>& shape) {
  Tensor t;
  t.buffer = buffer;
  t.dtype = dtype;
  t.ndim = static_cast<int>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  t.row_stride = t.row_bytes();
  return t;
}

// One tensor on one backend. With pad > 0 (4-byte dtypes only) every row is
// followed by `pad` elements that belong to no element of the tensor: `tensor`
// then has row_stride > row_bytes, and `whole` is the contiguous [rows, cols + pad]
// view used for upload/download.
struct BackendTensor {
  Backend* backend = nullptr;
  std::unique_ptr<Buffer> buffer;
  Tensor tensor;
  Tensor whole;
  int64_t pad = 0;

  BackendTensor() = default;
  BackendTensor(Backend& b, DType dtype, const std::vector<int64_t>& shape, int64_t pad_elements = 0)
      : backend(&b), pad(pad_elements) {
    const Tensor probe = make_tensor(nullptr, dtype, shape);
    REQUIRE((pad == 0 || dtype_traits(dtype).block_size == 1));
    const int64_t rows = probe.rows(), cols = probe.cols();
    whole = make_tensor(nullptr, dtype, {rows, cols + pad});
    buffer = b.allocate(std::max<size_t>(whole.num_bytes(), 1));
    whole.buffer = buffer.get();
    tensor = make_tensor(buffer.get(), dtype, shape);
    tensor.row_stride = whole.row_stride;
  }

  int64_t rows() const { return tensor.rows(); }
  int64_t cols() const { return tensor.cols(); }

  // Values of the tensor's elements in row-major order (padding gets kPadValue).
  template <class T>
  void upload(const std::vector<T>& values) {
    REQUIRE(values.size() * sizeof(T) == static_cast<size_t>(rows()) * tensor.row_bytes());
    if (pad == 0) {
      backend->upload(whole, std::as_bytes(std::span(values)));
      return;
    }
    if constexpr (sizeof(T) != 4) {
      FAIL("padded rows need a 4-byte element type");
    } else {
      std::vector<T> padded(static_cast<size_t>(rows() * (cols() + pad)));
      T pad_value;
      std::memcpy(&pad_value, &kPadValue, 4);
      for (int64_t r = 0; r < rows(); ++r)
        for (int64_t c = 0; c < cols() + pad; ++c)
          padded[size_t(r * (cols() + pad) + c)] = c < cols() ? values[size_t(r * cols() + c)] : pad_value;
      backend->upload(whole, std::as_bytes(std::span(padded)));
    }
  }
  void upload_bytes(const std::vector<std::byte>& bytes) {
    REQUIRE(pad == 0);
    backend->upload(whole, bytes);
  }

  // The whole buffer, padding included, after synchronize() (download may be
  // asynchronous: the engine synchronizes before reading what it downloaded).
  template <class T = float>
  std::vector<T> download_whole() const {
    std::vector<T> values(whole.num_bytes() / sizeof(T));
    backend->download(whole, std::as_writable_bytes(std::span(values)));
    backend->synchronize();
    return values;
  }
  // The tensor's elements only.
  template <class T = float>
  std::vector<T> download() const {
    std::vector<T> all = download_whole<T>();
    if (pad == 0) return all;
    std::vector<T> values;
    values.reserve(static_cast<size_t>(rows() * cols()));
    for (int64_t r = 0; r < rows(); ++r)
      values.insert(values.end(), all.begin() + r * (cols() + pad), all.begin() + r * (cols() + pad) + cols());
    return values;
  }
  // Whether every padding element still holds kPadValue.
  bool padding_intact() const {
    if (pad == 0) return true;
    const std::vector<float> all = download_whole<float>();
    for (int64_t r = 0; r < rows(); ++r)
      for (int64_t c = cols(); c < cols() + pad; ++c)
        if (std::memcmp(&all[size_t(r * (cols() + pad) + c)], &kPadValue, 4) != 0) return false;
    return true;
  }
};

// Weights made from host bytes with wrap_weights (the bytes outlive the buffer:
// a std::vector keeps its heap block when the struct is moved).
struct BackendWeights {
  std::vector<std::byte> bytes;
  std::unique_ptr<Buffer> buffer;
  Tensor tensor;

  BackendWeights() = default;
  BackendWeights(Backend& backend, std::vector<std::byte> host, DType dtype, const std::vector<int64_t>& shape)
      : bytes(std::move(host)) {
    buffer = backend.wrap_weights(bytes);
    tensor = make_tensor(buffer.get(), dtype, shape);
    REQUIRE(tensor.num_bytes() == bytes.size());
  }
};

inline constexpr DType kMatmulDTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0,
                                          DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                          DType::Q4_K, DType::Q5_K, DType::Q6_K};

inline bool is_float_dtype(DType dtype) { return dtype_traits(dtype).block_size == 1; }

// Random weights [rows, cols] of `dtype`: uniform [-1, 1] for F32/F16/BF16; for
// block formats random payload bits with finite F16 scales in [0.001, 0.05] in
// every block (random bits there would give infinities and NaNs).
inline std::vector<std::byte> random_weight_bytes(DType dtype, int64_t rows, int64_t cols, std::mt19937& rng) {
  const size_t num_bytes = *dtype_bytes(dtype, static_cast<uint64_t>(rows * cols));
  std::vector<std::byte> bytes(num_bytes);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f), scale(0.001f, 0.05f);
  auto put_half = [&](size_t at, float v) {
    const uint16_t h = cpu::fp32_to_fp16(v);
    std::memcpy(&bytes[at], &h, 2);
  };
  if (is_float_dtype(dtype)) {
    for (int64_t i = 0; i < rows * cols; ++i) {
      const float v = value(rng);
      if (dtype == DType::F32) {
        std::memcpy(&bytes[size_t(i) * 4], &v, 4);
      } else {
        const uint16_t h = dtype == DType::F16 ? cpu::fp32_to_fp16(v) : cpu::fp32_to_bf16(v);
        std::memcpy(&bytes[size_t(i) * 2], &h, 2);
      }
    }
    return bytes;
  }
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
  const size_t block_bytes = dtype_traits(dtype).block_bytes;
  for (size_t at = 0; at < num_bytes; at += block_bytes) {
    switch (dtype) {
      case DType::Q6_K: put_half(at + 208, scale(rng)); break;  // ql, qh, scales, then d
      case DType::Q8_0:
      case DType::Q4_0:
      case DType::Q5_0: put_half(at, scale(rng)); break;  // d first
      default:  // Q4_1, Q5_1, Q4_K, Q5_K: d then m / dmin
        put_half(at, scale(rng));
        put_half(at + 2, scale(rng));
    }
  }
  return bytes;
}

inline std::vector<int32_t> random_ints(std::mt19937& rng, size_t n, int32_t lo, int32_t hi) {
  std::uniform_int_distribution<int32_t> dist(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = dist(rng);
  return v;
}

// max|got - ref| / max(1, max|ref|): the error relative to the size of the result,
// with values below 1 judged absolutely. Any NaN or size mismatch gives infinity.
inline double normalized_error(const std::vector<float>& got, const std::vector<float>& ref) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double worst = 0.0, scale = 1.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(ref[i]));
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, d);
    scale = std::max(scale, std::fabs(double(ref[i])));
  }
  return worst / scale;
}

// The index of the largest |got - ref| (NaN first), for failure messages.
inline size_t worst_index(const std::vector<float>& got, const std::vector<float>& ref) {
  size_t at = 0;
  double worst = -1.0;
  for (size_t i = 0; i < std::min(got.size(), ref.size()); ++i) {
    double d = std::fabs(double(got[i]) - double(ref[i]));
    if (std::isnan(d)) d = std::numeric_limits<double>::infinity();
    if (d > worst) worst = d, at = i;
  }
  return at;
}

// Checks normalized_error(got, ref) <= tolerance, naming `what` and the worst
// element on failure; returns the error.
inline double check_normalized(const std::string& what, const std::vector<float>& got, const std::vector<float>& ref,
                               double tolerance) {
  const double error = normalized_error(got, ref);
  if (!(error <= tolerance)) {
    const size_t i = worst_index(got, ref);
    INFO(what << ": normalized error " << error << " > " << tolerance << "; worst element " << i << " got "
              << (i < got.size() ? got[i] : NAN) << " ref " << (i < ref.size() ? ref[i] : NAN) << " (sizes "
              << got.size() << ", " << ref.size() << ")");
    CHECK(error <= tolerance);
  }
  return error;
}

// Collects the worst error seen per op and prints one line per op at the end of a
// test case, so a run on a GPU shows how much headroom every tolerance has. A
// negative tolerance records an op checked by a per-element bound instead.
class ErrorLog {
 public:
  explicit ErrorLog(std::string title) : title_(std::move(title)) {}
  void record(const std::string& op, double error, double tolerance) {
    for (auto& e : entries_)
      if (e.op == op) {
        e.worst = std::max(e.worst, error);
        e.tolerance = tolerance;
        return;
      }
    entries_.push_back({op, error, tolerance});
  }
  double check(const std::string& op, const std::string& detail, const std::vector<float>& got,
               const std::vector<float>& ref, double tolerance) {
    const double error = check_normalized(op + " " + detail, got, ref, tolerance);
    record(op, error, tolerance);
    return error;
  }
  ~ErrorLog() {
    if (entries_.empty()) return;
    std::ostringstream out;
    out << title_ << " (worst normalized error / tolerance):";
    for (const auto& e : entries_) {
      out << "\n  " << e.op << ": " << e.worst << " / ";
      if (e.tolerance < 0) out << "(per-element bound)";
      else out << e.tolerance;
    }
    MESSAGE(out.str());
  }

 private:
  struct Entry {
    std::string op;
    double worst;
    double tolerance;
  };
  std::string title_;
  std::vector<Entry> entries_;
};

// Why the CUDA tests cannot run here: "built without CUDA", or "no CUDA device
// (cudaErrorNoDevice ...)"; empty when a device is present.
inline std::string cuda_unavailable_reason() {
  std::string why;
  if (cuda_device_count(&why) > 0) return "";
  if (!built_with_cuda()) return "built without CUDA";
  return "no CUDA device" + (why.empty() ? std::string() : " (" + why + ")");
}

// The CUDA backend on device 0, or nullptr once the test is reported skipped (see
// tests/unit/prerequisites.h; with SLUICE_REQUIRE_GPU=1 it fails instead). A device
// that is present but fails to initialise throws (a failure, not a skip).
inline std::unique_ptr<Backend> cuda_backend_or_skip(std::string_view what) {
  const std::string why = cuda_unavailable_reason();
  if (!sluice::testing::has_prerequisite(sluice::testing::Prerequisite::gpu, why.empty(), std::string(what), why))
    return nullptr;
  return make_backend(resolve_backend("cuda:0"));
}

}  // namespace sluice::backends::test
