#pragma once
// A device buffer for F32 / I32 activations that grows to the largest view asked
// of it and is reused afterwards, so a steady stream of steps allocates nothing.
// Views stay valid until the next larger request. Owned by one runner; its engine
// thread only.
#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <memory>

#include "backends/backend.h"

namespace sluice::engine::tts {

class ScratchBuffer {
 public:
  // A contiguous view of `shape` (4-byte elements).
  backends::Tensor view(backends::Backend& backend, backends::DType dtype, std::initializer_list<int64_t> shape) {
    size_t bytes = 4;
    for (int64_t d : shape) bytes *= static_cast<size_t>(d);
    if (bytes > bytes_ || !buffer_) {
      const size_t grown = std::max(bytes, bytes_ * 3 / 2);
      buffer_.reset();
      buffer_ = backend.allocate(grown);
      bytes_ = grown;
    }
    return backends::Tensor::make(buffer_.get(), 0, dtype, shape);
  }

 private:
  std::unique_ptr<backends::Buffer> buffer_;
  size_t bytes_ = 0;
};

}  // namespace sluice::engine::tts
