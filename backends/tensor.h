#pragma once
// Buffers (device memory owned by a backend) and Tensor views into them.
//
// Shapes are row-major: shape[0] is the outermost dimension and the last one is
// contiguous. A "row" is one run of the last dimension; rows may be strided (a
// slice of a wider tensor), elements within a row never are. For block-quantized
// dtypes the last dimension counts elements and is a whole number of blocks.
// Weights are [out, in], exactly as GGUF stores them (GGML's ne[0] = in).
//
// Models and the engine hold Buffers and make Tensor views; only the backend that
// made a Buffer touches its bytes, so model code is the same for every device.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "backends/dtype.h"

namespace sluice::backends {

enum class DeviceKind { cpu, cuda, metal };

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual size_t size() const = 0;
  virtual DeviceKind device() const = 0;
};

struct Tensor {
  static constexpr int kMaxDims = 4;

  Buffer* buffer = nullptr;  // nullptr: "no tensor" (an optional bias, say)
  size_t offset = 0;         // bytes from the start of the buffer to element 0
  DType dtype = DType::F32;
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  size_t row_stride = 0;     // bytes between consecutive rows

  // A contiguous tensor of `shape` at `offset` in `buffer`.
  static Tensor make(Buffer* buffer, size_t offset, DType dtype, std::initializer_list<int64_t> shape);

  explicit operator bool() const { return buffer != nullptr; }
  int64_t dim(int i) const { return shape[i < 0 ? ndim + i : i]; }
  int64_t cols() const { return ndim ? shape[ndim - 1] : 1; }  // elements per row
  int64_t rows() const;                                          // product of all but the last dim
  int64_t num_elements() const { return rows() * cols(); }
  size_t row_bytes() const;                                      // bytes of one row's data
  bool is_contiguous() const { return row_stride == row_bytes(); }
  size_t num_bytes() const;  // bytes spanned from element 0 to the end of the last row

  // Rows [begin, begin + count) of the outermost dimension.
  Tensor slice(int64_t begin, int64_t count) const;
  // The same contiguous data under another shape with the same number of elements
  // and the same last-dimension block alignment.
  Tensor reshape(std::initializer_list<int64_t> new_shape) const;
};

// Same number of dimensions and the same extent in each (dtype and strides aside).
inline bool same_shape(const Tensor& a, const Tensor& b) {
  if (a.ndim != b.ndim) return false;
  for (int i = 0; i < a.ndim; ++i)
    if (a.shape[static_cast<size_t>(i)] != b.shape[static_cast<size_t>(i)]) return false;
  return true;
}

}  // namespace sluice::backends
