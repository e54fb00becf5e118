#include "backends/cpu/cpu_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/check.h"
#include "backends/cpu/quant/packed_matrix.h"

namespace sluice::backends::cpu {

HostBuffer::HostBuffer(size_t size) : size_(size) {
  // aligned_alloc wants a multiple of the alignment; never ask for 0 bytes.
  const size_t rounded = (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  data_ = static_cast<std::byte*>(std::aligned_alloc(kBufferAlignment, rounded ? rounded : kBufferAlignment));
  if (!data_) throw std::bad_alloc();
  std::memset(data_, 0, rounded);
}

HostBuffer::~HostBuffer() { std::free(data_); }

PackedWeightBuffer::PackedWeightBuffer(std::span<const std::byte> bytes, std::unique_ptr<PackedMatrix> packed)
    : bytes_(bytes), packed_(std::move(packed)) {}

PackedWeightBuffer::~PackedWeightBuffer() = default;

std::byte* host_ptr(const Tensor& t) {
  const auto* buffer = dynamic_cast<const CpuBuffer*>(t.buffer);
  SLUICE_CHECK(buffer != nullptr, "tensor is not in a CPU buffer");
  SLUICE_CHECK(t.offset + t.num_bytes() <= buffer->size(), "tensor runs past the end of its buffer");
  return buffer->data() + t.offset;
}

}  // namespace sluice::backends::cpu
