#pragma once
// A quantized weight matrix repacked into packed_format.h's layout, made once at
// load (or on the fly for a matmul whose weight was never prepared).
//
// Values are carried over exactly (u, and the F16 scales of the *_0/*_1 formats);
// the k-quants' sub-block scales d * sc and mins dmin * m, which GGML computes in
// F32, are stored rounded to F16 (relative error <= 2^-11, far below the 4-6 bit
// rounding of the values themselves).
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/cpu/quant/packed_format.h"
#include "backends/dtype.h"

namespace sluice::backends::cpu {

class ThreadPool;

// Block k of one row in packed terms (tests check packing and kernels with it):
// element e is a[h] * u[e] + b[h], h = 1 for e >= 16 in split16 formats, else 0.
struct PackedValues {
  uint8_t u[kPackBlock];
  float a[2];
  float b[2];
};

class PackedMatrix {
 public:
  // w: rows x cols of `dtype` (packed_format(dtype) non-null), rows `row_bytes` apart;
  // cols a multiple of 32.
  PackedMatrix(ThreadPool& pool, DType dtype, const std::byte* w, size_t row_bytes, int64_t rows, int64_t cols);

  const PackedFormat& format() const { return *format_; }
  DType source_dtype() const { return dtype_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t num_groups() const { return (rows_ + kPackRows - 1) / kPackRows; }
  int64_t num_blocks() const { return cols_ / kPackBlock; }
  size_t group_bytes() const { return static_cast<size_t>(num_blocks()) * format_->block_bytes(); }
  size_t num_bytes() const { return group_bytes() * static_cast<size_t>(num_groups()); }
  const uint8_t* group(int64_t g) const { return data_.get() + static_cast<size_t>(g) * group_bytes(); }
  PackedValues values(int64_t row, int64_t block) const;

 private:
  struct FreeAligned {
    void operator()(uint8_t* p) const;
  };
  DType dtype_;
  const PackedFormat* format_;
  int64_t rows_, cols_;
  std::unique_ptr<uint8_t[], FreeAligned> data_;
};

}  // namespace sluice::backends::cpu
