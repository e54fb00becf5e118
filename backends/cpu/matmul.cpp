#include "backends/cpu/matmul.h"

#include <algorithm>
#include <vector>

#include "backends/check.h"
#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/dequantize.h"
#include "backends/cpu/dot.h"
#include "backends/cpu/thread_pool.h"

namespace sluice::backends::cpu {
namespace {

// A work item is (a tile of activation rows) x (a tile of weight rows). Each weight
// row is expanded once per item and reused against all of the item's activation
// rows, which stay in cache while the weights stream past.
constexpr int64_t kRowTile = 64;  // activation rows per item
constexpr int64_t kOutTile = 16;  // weight rows per item
constexpr int kMicroRows = 4;     // activation rows sharing each load of the weight row

void weight_row_times_rows(const float* w_row, const Rows<const float>& x, const Rows<float>& y,
                           int64_t o, int64_t t_begin, int64_t t_end, int64_t n) {
  int64_t t = t_begin;
  for (; t + kMicroRows <= t_end; t += kMicroRows) {
    const float* xs[kMicroRows];
    float out[kMicroRows];
    for (int r = 0; r < kMicroRows; ++r) xs[r] = x[t + r];
    dot_rows<kMicroRows>(w_row, xs, n, out);
    for (int r = 0; r < kMicroRows; ++r) y[t + r][o] = out[r];
  }
  for (; t < t_end; ++t) {
    const float* xs[1] = {x[t]};
    dot_rows<1>(w_row, xs, n, &y[t][o]);
  }
}

}  // namespace

void matmul(ThreadPool& pool, const Tensor& x, const Tensor& w, const Tensor& y) {
  SLUICE_CHECK(x.dtype == DType::F32 && y.dtype == DType::F32, "matmul: x and y must be F32");
  SLUICE_CHECK(can_dequantize(w.dtype), "matmul: unsupported weight dtype");
  SLUICE_CHECK(w.ndim == 2, "matmul: w must be [out, in]");
  SLUICE_CHECK(x.cols() == w.cols(), "matmul: x and w disagree on `in`");
  SLUICE_CHECK(y.cols() == w.dim(0) && y.rows() == x.rows(), "matmul: y must be [T, out]");
  const int64_t num_tokens = x.rows();
  const int64_t n = x.cols();
  const int64_t num_out = w.dim(0);
  if (num_tokens == 0 || num_out == 0) return;

  const Rows<const float> xr(x);
  const Rows<float> yr(y);
  const Rows<const std::byte> wr(w);
  const bool is_f32 = w.dtype == DType::F32;
  const int64_t num_row_tiles = (num_tokens + kRowTile - 1) / kRowTile;
  const int64_t num_out_tiles = (num_out + kOutTile - 1) / kOutTile;

  pool.parallel_for(num_row_tiles * num_out_tiles, [&](int64_t begin, int64_t end) {
    thread_local std::vector<float> scratch;  // one expanded weight row [in]
    if (!is_f32 && static_cast<int64_t>(scratch.size()) < n) scratch.resize(static_cast<size_t>(n));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t_begin = item / num_out_tiles * kRowTile;
      const int64_t t_end = std::min(num_tokens, t_begin + kRowTile);
      const int64_t o_begin = item % num_out_tiles * kOutTile;
      const int64_t o_end = std::min(num_out, o_begin + kOutTile);
      for (int64_t o = o_begin; o < o_end; ++o) {
        const float* w_row;
        if (is_f32) {
          w_row = reinterpret_cast<const float*>(wr[o]);
        } else {
          dequantize_row(w.dtype, wr[o], scratch.data(), n);
          w_row = scratch.data();
        }
        weight_row_times_rows(w_row, xr, yr, o, t_begin, t_end, n);
      }
    }
  });
}

}  // namespace sluice::backends::cpu
