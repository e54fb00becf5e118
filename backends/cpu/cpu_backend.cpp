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
#include "backends/cpu/quant/packed_matrix.h"

namespace sluice::backends {

std::unique_ptr<Backend> make_cpu_backend(int num_threads) {
  return std::make_unique<cpu::CpuBackend>(num_threads, cpu::active_kernel_path());
}

std::unique_ptr<Backend> make_reference_cpu_backend(int num_threads) {
  return std::make_unique<cpu::CpuBackend>(num_threads, cpu::KernelPath::f32);
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

CpuBackend::CpuBackend(int num_threads, KernelPath path)
    : pool_(num_threads), path_(path), quant_matmul_(path == KernelPath::f32 ? KernelPath::scalar : path) {}

std::string CpuBackend::kernel_path() const { return std::string(kernel_path_name(path_)); }

MemoryInfo CpuBackend::memory_info() const { return read_meminfo(); }

std::unique_ptr<Buffer> CpuBackend::allocate(size_t bytes) { return std::make_unique<HostBuffer>(bytes); }

std::unique_ptr<Buffer> CpuBackend::wrap_weights(std::span<const std::byte> bytes) {
  return std::make_unique<WrappedBuffer>(bytes);
}

std::unique_ptr<Buffer> CpuBackend::wrap_matrix(std::span<const std::byte> bytes, DType dtype, int64_t rows,
                                                int64_t cols) {
  if (path_ == KernelPath::f32 || !packed_format(dtype) || cols % kPackBlock != 0) return wrap_weights(bytes);
  const size_t row_bytes = bytes.size() / static_cast<size_t>(std::max<int64_t>(rows, 1));
  SLUICE_CHECK(row_bytes * static_cast<size_t>(rows) == bytes.size(), "wrap_matrix: bytes are not rows x row_bytes");
  auto packed = std::make_unique<PackedMatrix>(pool_, dtype, bytes.data(), row_bytes, rows, cols);
  made_weight_bytes_ += packed->num_bytes();
  return std::make_unique<PackedWeightBuffer>(bytes, std::move(packed));
}

const PackedMatrix* CpuBackend::packed(const Tensor& w, std::unique_ptr<PackedMatrix>& temp) {
  if (path_ == KernelPath::f32 || !packed_format(w.dtype) || w.cols() % kPackBlock != 0) return nullptr;
  const auto* buffer = dynamic_cast<const PackedWeightBuffer*>(w.buffer);
  if (buffer && w.offset == 0 && buffer->packed().rows() == w.rows() && buffer->packed().cols() == w.cols() &&
      buffer->packed().source_dtype() == w.dtype)
    return &buffer->packed();
  temp = std::make_unique<PackedMatrix>(pool_, w.dtype, host_ptr(w), w.row_stride, w.rows(), w.cols());
  return temp.get();
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
void CpuBackend::matmul(const Tensor& x, const Tensor& w, const Tensor& y) {
  std::unique_ptr<PackedMatrix> temp;
  if (const PackedMatrix* p = packed(w, temp)) {
    const PackedMatrix* ws[] = {p};
    quant_matmul_.run(pool_, x, ws, {&y, 1});
    return;
  }
  cpu::matmul(pool_, path_, x, w, y);
}

void CpuBackend::matmul_shared_input(const Tensor& x, std::span<const Tensor> ws, std::span<const Tensor> ys) {
  constexpr size_t kMax = 4;
  std::unique_ptr<PackedMatrix> temps[kMax];
  const PackedMatrix* packs[kMax];
  bool all_packed = ws.size() <= kMax;
  for (size_t i = 0; all_packed && i < ws.size(); ++i) all_packed = (packs[i] = packed(ws[i], temps[i])) != nullptr;
  if (!all_packed) return Backend::matmul_shared_input(x, ws, ys);
  quant_matmul_.run(pool_, x, {packs, ws.size()}, ys);
}

void CpuBackend::gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up, bool gelu,
                           const Tensor& scratch, const Tensor& out) {
  // gate -> out, up -> scratch in one op, then the activation.
  const Tensor ws[] = {w_gate, w_up};
  const Tensor ys[] = {out, scratch};
  matmul_shared_input(x, ws, ys);
  if (gelu) {
    cpu::geglu(pool_, out, scratch, out);
  } else {
    cpu::swiglu(pool_, out, scratch, out);
  }
}
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
void CpuBackend::mul(const Tensor& a, const Tensor& b, const Tensor& out) { cpu::mul(pool_, a, b, out); }
void CpuBackend::transpose(const Tensor& x, const Tensor& out) { cpu::transpose(pool_, x, out); }
void CpuBackend::softmax(const Tensor& x, const Tensor& out) { cpu::softmax(pool_, x, out); }
void CpuBackend::activate(const Tensor& x, Activation act, const Tensor& out) { cpu::activate(pool_, x, act, out); }
void CpuBackend::clamp(const Tensor& x, float lo, float hi, const Tensor& out) { cpu::clamp(pool_, x, lo, hi, out); }
void CpuBackend::add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) {
  cpu::add_bias(pool_, x, bias, out);
}
void CpuBackend::snake(const Tensor& x, const Tensor& alpha, const Tensor& inv_beta, const Tensor& out) {
  cpu::snake(pool_, path_, x, alpha, inv_beta, out);
}
void CpuBackend::conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, int dilation, const Tensor& out) {
  cpu::conv1d(pool_, path_, conv_scratch_, x, w, bias, dilation, out);
}
void CpuBackend::depthwise_conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out) {
  cpu::depthwise_conv1d(pool_, x, w, bias, out);
}
void CpuBackend::conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias, int stride,
                                  const Tensor& out) {
  cpu::conv_transpose1d(pool_, path_, conv_scratch_, x, w, bias, stride, out);
}
void CpuBackend::write_kv(const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots) {
  cpu::write_kv(pool_, k, v, cache, slots);
}
void CpuBackend::attention(const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
                           const AttentionParams& params, const Tensor& out) {
  cpu::attention(pool_, path_ == KernelPath::f32 ? runnable_kernel_paths().back() : path_, q, cache, sequences, params, out);
}

}  // namespace cpu
}  // namespace sluice::backends
