#pragma once
// Host-memory buffers of the CPU backend, and the one way kernels in backends/cpu/
// reach a Tensor's bytes. Nothing outside backends/cpu/ includes this file.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "backends/tensor.h"

namespace sluice::backends::cpu {

class PackedMatrix;

inline constexpr size_t kBufferAlignment = 64;  // a cache line; every SIMD width we use

// A Buffer whose bytes are ordinary host memory.
class CpuBuffer : public Buffer {
 public:
  DeviceKind device() const override { return DeviceKind::cpu; }
  virtual std::byte* data() const = 0;
};

// Owns `size` bytes aligned to kBufferAlignment, zero-filled.
class HostBuffer final : public CpuBuffer {
 public:
  explicit HostBuffer(size_t size);
  ~HostBuffer() override;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  size_t size() const override { return size_; }
  std::byte* data() const override { return data_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Borrows weight bytes (an mmap'd file) without copying; they must outlive it.
// Kernels only read weights, so the const_cast in data() never leads to a write
// unless a caller passes a weight tensor as an output (a bug; the mapping may be
// read-only and then the process faults).
class WrappedBuffer final : public CpuBuffer {
 public:
  explicit WrappedBuffer(std::span<const std::byte> bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  std::byte* data() const override { return const_cast<std::byte*>(bytes_.data()); }

 private:
  std::span<const std::byte> bytes_;
};

// A weight matrix borrowed as WrappedBuffer does, plus the repacked copy that the
// integer matmul reads (every other op reads the original bytes).
class PackedWeightBuffer final : public CpuBuffer {
 public:
  PackedWeightBuffer(std::span<const std::byte> bytes, std::unique_ptr<PackedMatrix> packed);
  ~PackedWeightBuffer() override;
  size_t size() const override { return bytes_.size(); }
  std::byte* data() const override { return const_cast<std::byte*>(bytes_.data()); }
  const PackedMatrix& packed() const { return *packed_; }

 private:
  std::span<const std::byte> bytes_;
  std::unique_ptr<PackedMatrix> packed_;
};

// Element 0 of t: its buffer's base + offset. Checks that t lives in a CPU buffer.
std::byte* host_ptr(const Tensor& t);

// The rows of t (runs of its last dimension, counted over all leading dims) as
// typed pointers; resolves the buffer once, so kernels can index rows cheaply.
template <class T>
struct Rows {
  std::byte* base;
  size_t stride;
  explicit Rows(const Tensor& t) : base(host_ptr(t)), stride(t.row_stride) {}
  T* operator[](int64_t row) const { return reinterpret_cast<T*>(base + static_cast<size_t>(row) * stride); }
};

}  // namespace sluice::backends::cpu
