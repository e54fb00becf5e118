#pragma once
// Device tensors for one pass of the speaker encoder, freed together when the
// arena goes. Reference audio is encoded once per voice, not per step, so a
// buffer per intermediate costs nothing that matters and keeps the forward plain.
// One thread.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace sluice::engine::tts {

class DeviceArena {
 public:
  explicit DeviceArena(backends::Backend& backend) : backend_(backend) {}

  // A new contiguous tensor (contents undefined).
  backends::Tensor make(backends::DType dtype, std::initializer_list<int64_t> shape) {
    const backends::Tensor probe = backends::Tensor::make(nullptr, 0, dtype, shape);
    auto& buffer = buffers_.emplace_back(backend_.allocate(std::max<size_t>(probe.num_bytes(), 4)));
    return backends::Tensor::make(buffer.get(), 0, dtype, shape);
  }
  backends::Tensor f32(std::initializer_list<int64_t> shape) { return make(backends::DType::F32, shape); }

  // A new tensor holding `values` (4-byte elements: F32 or I32).
  template <class T>
  backends::Tensor upload(backends::DType dtype, std::initializer_list<int64_t> shape, const std::vector<T>& values) {
    const backends::Tensor t = make(dtype, shape);
    backend_.upload(t, std::as_bytes(std::span<const T>(values)));
    return t;
  }

 private:
  backends::Backend& backend_;
  std::vector<std::unique_ptr<backends::Buffer>> buffers_;
};

}  // namespace sluice::engine::tts
