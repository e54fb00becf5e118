#pragma once
// Columns [begin, begin + count) of a 2-D F32 tensor as a view with strided rows:
// how the speaker encoder splits channel groups (Res2Net) and concatenates along
// channels (writing each part into its columns) without copies. Backend ops take
// strided rows (backend.h).
#include <cstdint>

#include "backends/check.h"
#include "backends/tensor.h"

namespace sluice::engine::tts {

inline backends::Tensor columns(const backends::Tensor& t, int64_t begin, int64_t count) {
  SLUICE_CHECK(t.ndim == 2 && t.dtype == backends::DType::F32 && begin >= 0 && count >= 0 && begin + count <= t.cols(),
               "columns: not a column range of a 2-D F32 tensor");
  backends::Tensor view = t;
  view.offset += static_cast<size_t>(begin) * sizeof(float);
  view.shape[1] = count;
  return view;
}

}  // namespace sluice::engine::tts
