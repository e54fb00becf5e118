#include "backends/cpu/matmul.h"

#include <algorithm>
#include <vector>

#include "backends/check.h"
#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/dequantize.h"
#include "backends/cpu/float_matmul_kernel.h"
#include "backends/cpu/thread_pool.h"

namespace sluice::backends::cpu {
namespace {

// A work item is (a tile of activation rows) x (a tile of weight rows). Each weight
// row is widened once per item and reused against all of the item's activation
// rows, which stay in cache while the weights stream past.
constexpr int64_t kRowTile = 64;  // activation rows per item
constexpr int64_t kOutTile = 24;  // weight rows per item: whole blocks of 4 and of 6 rows
// F16/BF16 rows are widened once per item: longer items widen each row fewer times
// (at 64, a 512-token F16 prompt spent 8% of its time widening). 256 rows of the
// widest activations (1,536 floats) take 1.5 MiB, within a core's L2 here.
constexpr int64_t kHalfRowTile = 256;

}  // namespace

bool is_float_weight(DType dtype) { return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16; }

FloatMatmulTile float_matmul_tile(KernelPath path) {
#if defined(SLUICE_X86_KERNELS)
  if (path == KernelPath::f32) path = runnable_kernel_paths().back();
  if (path == KernelPath::avx512_vnni) return avx512_float_matmul_tile();
  if (path == KernelPath::avx2 || path == KernelPath::avx2_vnni) return avx2_float_matmul_tile();
#endif
  (void)path;
  return scalar_float_matmul_tile();
}

void matmul(ThreadPool& pool, KernelPath path, const Tensor& x, const Tensor& w, const Tensor& y) {
  SLUICE_CHECK(x.dtype == DType::F32 && y.dtype == DType::F32, "matmul: x and y must be F32");
  SLUICE_CHECK(can_dequantize(w.dtype), "matmul: unsupported weight dtype");
  SLUICE_CHECK(w.ndim == 2, "matmul: w must be [out, in]");
  SLUICE_CHECK(x.cols() == w.cols(), "matmul: x and w disagree on `in`");
  SLUICE_CHECK(y.cols() == w.dim(0) && y.rows() == x.rows(), "matmul: y must be [T, out]");
  const int64_t num_tokens = x.rows();
  const int64_t n = x.cols();
  const int64_t num_out = w.dim(0);
  if (num_tokens == 0 || num_out == 0) return;

  const FloatMatmulTile tile = float_matmul_tile(path);
  const bool float_weights = is_float_weight(w.dtype);
  const FloatMatmulArgs args{
      .x = Rows<const float>(x)[0],
      .x_stride = static_cast<int64_t>(x.row_stride / sizeof(float)),
      .w = Rows<const std::byte>(w)[0],
      .w_stride = static_cast<int64_t>(w.row_stride),
      .w_dtype = w.dtype,
      .y = Rows<float>(y)[0],
      .y_stride = static_cast<int64_t>(y.row_stride / sizeof(float)),
      .n = n,
  };
  const int64_t row_tile = w.dtype == DType::F16 || w.dtype == DType::BF16 ? kHalfRowTile : kRowTile;
  const int64_t num_row_tiles = (num_tokens + row_tile - 1) / row_tile;
  const int64_t num_out_tiles = (num_out + kOutTile - 1) / kOutTile;

  pool.parallel_for(num_row_tiles * num_out_tiles, [&](int64_t begin, int64_t end) {
    // Float weights: the tile's widened rows. Other dtypes (the f32 reference path):
    // the item's weight rows dequantized to F32 after them, then the same tile over them.
    thread_local std::vector<float> scratch;
    const int64_t scratch_rows = kFloatScratchRows + (float_weights ? 0 : kOutTile);
    if (static_cast<int64_t>(scratch.size()) < scratch_rows * n) scratch.resize(static_cast<size_t>(scratch_rows * n));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t_begin = item / num_out_tiles * row_tile;
      const int64_t t_end = std::min(num_tokens, t_begin + row_tile);
      const int64_t o_begin = item % num_out_tiles * kOutTile;
      const int64_t o_end = std::min(num_out, o_begin + kOutTile);
      if (float_weights) {
        tile(args, t_begin, t_end, o_begin, o_end, scratch.data());
        continue;
      }
      float* rows = scratch.data() + kFloatScratchRows * n;
      for (int64_t o = o_begin; o < o_end; ++o) dequantize_row(w.dtype, args.w + o * args.w_stride, rows + (o - o_begin) * n, n);
      FloatMatmulArgs expanded = args;
      expanded.w = reinterpret_cast<const std::byte*>(rows);
      expanded.w_stride = n * static_cast<int64_t>(sizeof(float));
      expanded.w_dtype = DType::F32;
      expanded.y = args.y + o_begin;
      tile(expanded, t_begin, t_end, 0, o_end - o_begin, scratch.data());
    }
  });
}

}  // namespace sluice::backends::cpu
