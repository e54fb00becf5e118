// RMSNorm and LayerNorm over the last dimension. Sums are taken in double over 8
// fixed partial lanes (vectorizable, order fixed), so a row's result does not
// depend on anything but the row.
#include <cmath>

#include "backends/cpu/cpu_buffer.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/ops_common.h"

namespace sluice::backends::cpu {
namespace {

constexpr int kSumLanes = 8;

double reduce8(const double* acc) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

double sum_of(const float* x, int64_t n) {
  double acc[kSumLanes] = {};
  int64_t k = 0;
  for (; k + kSumLanes <= n; k += kSumLanes)
    for (int l = 0; l < kSumLanes; ++l) acc[l] += x[k + l];
  for (int l = 0; k + l < n; ++l) acc[l] += x[k + l];
  return reduce8(acc);
}

// sum (x - mean)^2; with mean 0 it is the sum of squares.
double sum_sq_dev(const float* x, int64_t n, double mean) {
  double acc[kSumLanes] = {};
  int64_t k = 0;
  for (; k + kSumLanes <= n; k += kSumLanes)
    for (int l = 0; l < kSumLanes; ++l) {
      const double d = x[k + l] - mean;
      acc[l] += d * d;
    }
  for (int l = 0; k + l < n; ++l) {
    const double d = x[k + l] - mean;
    acc[l] += d * d;
  }
  return reduce8(acc);
}

void check_norm_args(const Tensor& x, const Tensor& weight, const Tensor& out) {
  SLUICE_CHECK(x.dtype == DType::F32 && out.dtype == DType::F32, "norm: x and out must be F32");
  SLUICE_CHECK(same_shape(x, out), "norm: out must have x's shape");
  SLUICE_CHECK(weight.dtype == DType::F32 && weight.num_elements() == x.cols(), "norm: weight must be [d] F32");
}

}  // namespace

void rms_norm(ThreadPool& pool, const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  check_norm_args(x, weight, out);
  const int64_t d = x.cols();
  const Rows<const float> xr(x);
  const Rows<float> outr(out);
  const float* w = reinterpret_cast<const float*>(host_ptr(weight));
  for_each_row(pool, x.rows(), d, [&](int64_t r) {
    const float* xi = xr[r];
    float* yi = outr[r];
    const double mean_sq = sum_sq_dev(xi, d, 0.0) / static_cast<double>(d);
    const float inv = static_cast<float>(1.0 / std::sqrt(mean_sq + static_cast<double>(eps)));
    for (int64_t k = 0; k < d; ++k) yi[k] = xi[k] * inv * w[k];
  });
}

void layer_norm(ThreadPool& pool, const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                const Tensor& out) {
  check_norm_args(x, weight, out);
  const int64_t d = x.cols();
  SLUICE_CHECK(!bias || (bias.dtype == DType::F32 && bias.num_elements() == d), "layer_norm: bias must be [d] F32");
  const Rows<const float> xr(x);
  const Rows<float> outr(out);
  const float* w = reinterpret_cast<const float*>(host_ptr(weight));
  const float* b = bias ? reinterpret_cast<const float*>(host_ptr(bias)) : nullptr;
  for_each_row(pool, x.rows(), d, [&](int64_t r) {
    const float* xi = xr[r];
    float* yi = outr[r];
    const double mean = sum_of(xi, d) / static_cast<double>(d);
    const double var = sum_sq_dev(xi, d, mean) / static_cast<double>(d);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
    const float mean_f = static_cast<float>(mean);
    if (b) {
      for (int64_t k = 0; k < d; ++k) yi[k] = (xi[k] - mean_f) * inv * w[k] + b[k];
    } else {
      for (int64_t k = 0; k < d; ++k) yi[k] = (xi[k] - mean_f) * inv * w[k];
    }
  });
}

}  // namespace sluice::backends::cpu
