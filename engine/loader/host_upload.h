#pragma once
// Weights reshaped on the host at load and then uploaded: the pieces the speech
// models' weight loaders (the codec's decoder and encoder, the speaker encoder)
// share. Each loader keeps its own tensor names and shapes; these only move values.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"

namespace sluice::loader {

// PyTorch's Conv1d weight [cout, cin, taps] in backend.h's conv layout
// [cout, taps * cin]: the tap moved outward.
inline std::vector<float> conv1d_taps_outward(std::span<const float> w, int64_t cout, int64_t cin, int64_t taps) {
  std::vector<float> packed(w.size());
  for (int64_t o = 0; o < cout; ++o)
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t j = 0; j < taps; ++j) packed[(o * taps + j) * cin + c] = w[(o * cin + c) * taps + j];
  return packed;
}

// `values` as an F32 tensor of `shape`, in a new buffer added to `buffers`.
inline backends::Tensor upload_f32(backends::Backend& backend, std::vector<std::unique_ptr<backends::Buffer>>& buffers,
                                   std::span<const float> values, std::initializer_list<int64_t> shape) {
  auto& buffer = buffers.emplace_back(backend.allocate(values.size() * sizeof(float)));
  const backends::Tensor t = backends::Tensor::make(buffer.get(), 0, backends::DType::F32, shape);
  backend.upload(t, std::as_bytes(values));
  return t;
}

}  // namespace sluice::loader
