#include "backends/cuda/device_buffer.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "backends/check.h"
#include "backends/cuda/cuda_error.h"

namespace sluice::backends::cuda {
namespace {

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

}  // namespace

DeviceBuffer::DeviceBuffer(int device, size_t bytes) : size_(bytes) {
  throw_if_failed(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  if (bytes == 0) return;
  void* ptr = nullptr;
  const cudaError_t status = cudaMalloc(&ptr, bytes);
  if (status != cudaSuccess) {
    size_t free_bytes = 0, total_bytes = 0;
    cudaGetLastError();
    cudaMemGetInfo(&free_bytes, &total_bytes);
    throw_if_failed(status, "cuda:" + std::to_string(device) + ": cudaMalloc of " + gib(bytes) + " (" +
                                gib(free_bytes) + " free of " + gib(total_bytes) + ")");
  }
  data_ = static_cast<std::byte*>(ptr);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}

std::byte* device_ptr(const Tensor& t) {
  auto* buffer = dynamic_cast<DeviceBuffer*>(t.buffer);
  SLUICE_CHECK(buffer != nullptr, "cuda backend: tensor is not in device memory of this backend");
  return buffer->data() + t.offset;
}

void* Scratch::get(size_t bytes) {
  if (current_ && current_->size() >= bytes) return current_->data();
  const size_t capacity = current_ ? std::max(bytes, current_->size() * 2) : bytes;
  auto grown = std::make_unique<DeviceBuffer>(device_, capacity);
  if (current_) retired_.push_back(std::move(current_));
  current_ = std::move(grown);
  return current_->data();
}

}  // namespace sluice::backends::cuda
