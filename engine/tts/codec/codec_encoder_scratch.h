#pragma once
// Internal to the codec encoder (codec_encoder*.cpp): the SEANet activations of
// one chunk, sized at load for the largest chunk, and every conv's carried left
// context. Used by the encoding thread only.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.h"

namespace sluice::engine::tts {

struct CodecEncoderScratch {
  std::unique_ptr<backends::Buffer> in;      // a conv's input: [context + rows, channels]
  std::unique_ptr<backends::Buffer> x;       // the stage's residual stream [rows, channels]
  std::unique_ptr<backends::Buffer> t1, t2;  // a residual unit's hidden and output
  std::unique_ptr<backends::Buffer> context_buffer;
  std::vector<backends::Tensor> contexts;    // per conv site in pipeline order, [context rows, channels]
};

// Device buffers of one encode call (F32 or I32: 4 bytes an element), freed
// together when it returns.
class CallBuffers {
 public:
  explicit CallBuffers(backends::Backend& backend) : backend_(backend) {}
  // A device backend may still be running ops on them.
  ~CallBuffers() { backend_.synchronize(); }
  CallBuffers(const CallBuffers&) = delete;
  CallBuffers& operator=(const CallBuffers&) = delete;
  backends::Tensor make(backends::DType dtype, std::initializer_list<int64_t> shape) {
    size_t count = 1;
    for (int64_t d : shape) count *= static_cast<size_t>(d);
    auto& buffer = buffers_.emplace_back(backend_.allocate(std::max<size_t>(count, 1) * 4));
    return backends::Tensor::make(buffer.get(), 0, dtype, shape);
  }
  backends::Tensor f32(std::initializer_list<int64_t> shape) { return make(backends::DType::F32, shape); }

 private:
  backends::Backend& backend_;
  std::vector<std::unique_ptr<backends::Buffer>> buffers_;
};

}  // namespace sluice::engine::tts
