#pragma once
// Device memory: a Buffer owning one cudaMalloc allocation (never managed memory),
// and typed device pointers into it for the kernels.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/tensor.h"

namespace sluice::backends::cuda {

class DeviceBuffer final : public Buffer {
 public:
  // Throws CudaError (out of memory included) naming the device and the size.
  DeviceBuffer(int device, size_t bytes);
  ~DeviceBuffer() override;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  size_t size() const override { return size_; }
  DeviceKind device() const override { return DeviceKind::cuda; }
  std::byte* data() const { return data_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// Element 0 of a tensor on the device. SLUICE_CHECKs that it lives in a DeviceBuffer.
std::byte* device_ptr(const Tensor& t);
template <typename T>
T* device_ptr_as(const Tensor& t) {
  return reinterpret_cast<T*>(device_ptr(t));
}

// Row stride in elements of a tensor of 4-byte (or 2-byte) elements.
inline int64_t row_stride_elems(const Tensor& t, size_t elem_bytes) {
  return static_cast<int64_t>(t.row_stride / elem_bytes);
}

// A device scratch area that grows on demand. A grown-out allocation is kept (not
// freed) until release_retired(), because a recorded graph may still point at it.
class Scratch {
 public:
  explicit Scratch(int device) : device_(device) {}

  // At least `bytes` of device memory, valid until the next get() that grows it.
  void* get(size_t bytes);
  void release_retired() { retired_.clear(); }

 private:
  int device_;
  std::unique_ptr<DeviceBuffer> current_;
  std::vector<std::unique_ptr<DeviceBuffer>> retired_;
};

}  // namespace sluice::backends::cuda
