#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "backends/check.h"
#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/dequantize.h"
#include "backends/cpu/matmul.h"
#include "backends/cpu/ops.h"

namespace sluice::backends {

std::unique_ptr<Backend> make_cpu_backend(int num_threads) {
  return std::make_unique<cpu::CpuBackend>(num_threads);
}

namespace cpu {

MemoryInfo read_meminfo(const char* path) {
  MemoryInfo info;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    uint64_t kib = 0;
    if (!(fields >> key >> kib)) continue;
    if (key == "MemTotal:") info.total_bytes = kib * 1024;
    if (key == "MemAvailable:") info.free_bytes = kib * 1024;
  }
  return info;
}

CpuBackend::CpuBackend(int num_threads) : pool_(num_threads) {}

MemoryInfo CpuBackend::memory_info() const { return read_meminfo(); }

std::unique_ptr<Buffer> CpuBackend::allocate(size_t bytes) { return std::make_unique<HostBuffer>(bytes); }

std::unique_ptr<Buffer> CpuBackend::wrap_weights(std::span<const std::byte> bytes) {
  return std::make_unique<WrappedBuffer>(bytes);
}

void CpuBackend::upload(const Tensor& dst, std::span<const std::byte> src) {
  SLUICE_CHECK(dst.is_contiguous() && src.size() == dst.num_bytes(), "upload: size or layout mismatch");
  if (!src.empty()) std::memcpy(host_ptr(dst), src.data(), src.size());
}

void CpuBackend::download(const Tensor& src, std::span<std::byte> dst) {
  SLUICE_CHECK(src.is_contiguous() && dst.size() == src.num_bytes(), "download: size or layout mismatch");
  if (!dst.empty()) std::memcpy(dst.data(), host_ptr(src), dst.size());
}

void CpuBackend::fill_zero(const Tensor& dst) {
  if (dst.num_elements() == 0) return;
  std::byte* base = host_ptr(dst);
  if (dst.is_contiguous()) {
    std::memset(base, 0, dst.num_bytes());
    return;
  }
  for (int64_t r = 0; r < dst.rows(); ++r) std::memset(base + static_cast<size_t>(r) * dst.row_stride, 0, dst.row_bytes());
}

void CpuBackend::copy(const Tensor& src, const Tensor& dst) {
  SLUICE_CHECK(src.dtype == dst.dtype && src.rows() == dst.rows() && src.cols() == dst.cols(),
               "copy: src and dst differ in dtype or shape");
  const std::byte* from = host_ptr(src);
  std::byte* to = host_ptr(dst);
  if (src.is_contiguous() && dst.is_contiguous()) {
    // Split across the pool: one thread cannot saturate memory bandwidth.
    const size_t bytes = src.num_bytes();
    constexpr size_t kChunk = 1 << 20;
    pool_.parallel_for(static_cast<int64_t>((bytes + kChunk - 1) / kChunk), [&](int64_t begin, int64_t end) {
      const size_t lo = static_cast<size_t>(begin) * kChunk;
      const size_t hi = std::min(bytes, static_cast<size_t>(end) * kChunk);
      std::memcpy(to + lo, from + lo, hi - lo);
    });
    return;
  }
  for (int64_t r = 0; r < src.rows(); ++r)
    std::memcpy(to + static_cast<size_t>(r) * dst.row_stride, from + static_cast<size_t>(r) * src.row_stride,
                src.row_bytes());
}

bool CpuBackend::supports_matmul(DType weight_dtype) const { return can_dequantize(weight_dtype); }

void CpuBackend::embed(const Tensor& table, const Tensor& ids, const Tensor& out) {
  cpu::embed(pool_, table, ids, out);
}
void CpuBackend::matmul(const Tensor& x, const Tensor& w, const Tensor& y) { cpu::matmul(pool_, x, w, y); }
void CpuBackend::rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  cpu::rms_norm(pool_, x, weight, eps, out);
}
void CpuBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                            const Tensor& out) {
  cpu::layer_norm(pool_, x, weight, bias, eps, out);
}
void CpuBackend::rope(const Tensor& x, const Tensor& positions, const RopeParams& params) {
  cpu::rope(pool_, x, positions, params);
}
void CpuBackend::swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  cpu::swiglu(pool_, gate, up, out);
}
void CpuBackend::geglu(const Tensor& gate, const Tensor& up, const Tensor& out) {
  cpu::geglu(pool_, gate, up, out);
}
void CpuBackend::add(const Tensor& a, const Tensor& b, const Tensor& out) { cpu::add(pool_, a, b, out); }
void CpuBackend::scale(const Tensor& x, float s, const Tensor& out) { cpu::scale(pool_, x, s, out); }
void CpuBackend::softmax(const Tensor& x, const Tensor& out) { cpu::softmax(pool_, x, out); }
void CpuBackend::write_kv(const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots) {
  cpu::write_kv(pool_, k, v, cache, slots);
}
void CpuBackend::attention(const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
                           const AttentionParams& params, const Tensor& out) {
  cpu::attention(pool_, q, cache, sequences, params, out);
}

}  // namespace cpu
}  // namespace sluice::backends
