#include "backends/tensor.h"

#include <stdexcept>
#include <string>

namespace sluice::backends {
namespace {

size_t bytes_of(DType dtype, int64_t elements) {
  auto bytes = dtype_bytes(dtype, static_cast<uint64_t>(elements));
  if (!bytes)
    throw std::invalid_argument("tensor row of " + std::to_string(elements) + " " +
                                std::string(dtype_name(dtype)) +
                                " elements is not a whole number of blocks");
  return static_cast<size_t>(*bytes);
}

}  // namespace

Tensor Tensor::make(Buffer* buffer, size_t offset, DType dtype, std::initializer_list<int64_t> shape) {
  if (shape.size() == 0 || shape.size() > kMaxDims)
    throw std::invalid_argument("tensor needs 1 to 4 dimensions");
  Tensor t;
  t.buffer = buffer;
  t.offset = offset;
  t.dtype = dtype;
  t.ndim = static_cast<int>(shape.size());
  int i = 0;
  for (int64_t d : shape) t.shape[i++] = d;
  t.row_stride = t.row_bytes();
  return t;
}

int64_t Tensor::rows() const {
  int64_t n = 1;
  for (int i = 0; i + 1 < ndim; ++i) n *= shape[i];
  return n;
}

size_t Tensor::row_bytes() const { return bytes_of(dtype, cols()); }

size_t Tensor::num_bytes() const {
  int64_t r = rows();
  return r == 0 ? 0 : static_cast<size_t>(r - 1) * row_stride + row_bytes();
}

Tensor Tensor::slice(int64_t begin, int64_t count) const {
  if (begin < 0 || count < 0 || begin + count > shape[0])
    throw std::out_of_range("tensor slice out of range");
  Tensor t = *this;
  int64_t rows_per_outer = ndim > 1 ? rows() / shape[0] : 0;
  // A 1-D tensor is one row: slicing it moves within the row.
  t.offset += ndim > 1 ? static_cast<size_t>(begin * rows_per_outer) * row_stride
                       : bytes_of(dtype, begin);
  t.shape[0] = count;
  if (ndim == 1) t.row_stride = t.row_bytes();
  return t;
}

Tensor Tensor::reshape(std::initializer_list<int64_t> new_shape) const {
  if (!is_contiguous()) throw std::invalid_argument("reshape of a strided tensor");
  Tensor t = make(buffer, offset, dtype, new_shape);
  if (t.num_elements() != num_elements())
    throw std::invalid_argument("reshape changes the number of elements");
  return t;
}

}  // namespace sluice::backends
