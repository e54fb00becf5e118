// RoPE against references written from the formulas: both pair layouts, partial
// rotation, linear position scaling and Llama 3 frequency scaling.
//   reference "exact": all in double. Tolerance (|a|+|b|) * (|angle| * 2^-22 + 2^-21):
//     the kernel, like Hugging Face, rounds inv_freq and the angle pos * inv_freq to
//     F32, so its angle is off by up to ~|angle| * 2^-23.
//   reference "f32 angle": the same F32 angle, then cos/sin and the rotation in
//     double. Tolerance (|a|+|b|) * 2^-21 (cos/sin rounding and the F32 rotation).
#include <doctest/doctest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "cpu_test_util.h"

namespace sluice::backends::test::unit_backends_cpu_test_rope {
namespace {

// Hugging Face _compute_llama3_parameters, written out for one frequency.
double llama3(double inv_freq, double factor, double low, double high, double old_context) {
  const double wavelen = 2 * std::numbers::pi / inv_freq;
  const double high_freq_wavelen = old_context / high;
  const double low_freq_wavelen = old_context / low;
  if (wavelen < high_freq_wavelen) return inv_freq;
  if (wavelen > low_freq_wavelen) return inv_freq / factor;
  const double smooth = (old_context / wavelen - low) / (high - low);
  return (1 - smooth) * inv_freq / factor + smooth * inv_freq;
}

void check_rope(const RopeParams& p, int64_t t, int64_t heads, int64_t head_dim, uint32_t seed) {
  auto backend = make_cpu_backend(2);
  std::mt19937 rng(seed);
  const auto x = random_floats(rng, static_cast<size_t>(t * heads * head_dim), -2.0f, 2.0f);
  std::vector<int32_t> pos(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) pos[size_t(i)] = i == 0 ? 0 : static_cast<int32_t>(rng() % 9000);
  HostTensor xt(*backend, DType::F32, {t, heads, head_dim}), pt(*backend, DType::I32, {t});
  xt.set(*backend, x);
  pt.set(*backend, pos);
  backend->rope(xt.tensor, pt.tensor, p);
  const auto y = xt.get(*backend);

  const int n = p.num_rotated ? p.num_rotated : static_cast<int>(head_dim);
  const int half = n / 2;
  int failures = 0;
  for (int64_t i = 0; i < t; ++i)
    for (int64_t h = 0; h < heads; ++h) {
      const size_t base = size_t((i * heads + h) * head_dim);
      for (int j = 0; j < half; ++j) {
        double inv = std::pow(double(p.theta), -2.0 * j / n);
        if (p.llama3_factor > 0)
          inv = llama3(inv, p.llama3_factor, p.llama3_low_freq_factor, p.llama3_high_freq_factor,
                       p.llama3_original_context);
        inv *= p.freq_scale;
        const double angle = double(pos[size_t(i)]) * inv;
        const double angle_f32 = double(float(pos[size_t(i)]) * float(inv));
        const size_t ia = base + size_t(p.neox ? j : 2 * j);
        const size_t ib = base + size_t(p.neox ? j + half : 2 * j + 1);
        const double a = x[ia], b = x[ib];
        const double mag = std::fabs(a) + std::fabs(b);
        for (int which = 0; which < 2; ++which) {
          const double th = which == 0 ? angle : angle_f32;
          const double tol = which == 0 ? mag * (std::fabs(angle) * 0x1p-22 + 0x1p-21) : mag * 0x1p-21;
          const double ra = a * std::cos(th) - b * std::sin(th);
          const double rb = a * std::sin(th) + b * std::cos(th);
          if ((std::fabs(y[ia] - ra) > tol || std::fabs(y[ib] - rb) > tol) && failures++ < 3) {
            INFO("t=" << i << " head=" << h << " pair=" << j << " ref=" << which << " pos=" << pos[size_t(i)]);
            CHECK(std::fabs(y[ia] - ra) <= tol);
            CHECK(std::fabs(y[ib] - rb) <= tol);
          }
        }
      }
      for (int64_t k = n; k < head_dim; ++k) CHECK(y[base + size_t(k)] == x[base + size_t(k)]);  // not rotated
    }
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("rope: normal (adjacent pairs) and NeoX layouts") {
  for (bool neox : {false, true}) {
    CAPTURE(neox);
    RopeParams p;
    p.theta = 10000.0f;
    p.neox = neox;
    check_rope(p, 1, 3, 64, 1);
    check_rope(p, 37, 4, 64, 2);
    p.theta = 1000000.0f;
    check_rope(p, 9, 2, 128, 3);
  }
}

TEST_CASE("rope: partial rotation and linear position scaling") {
  for (bool neox : {false, true}) {
    CAPTURE(neox);
    RopeParams p;
    p.neox = neox;
    p.num_rotated = 32;
    p.freq_scale = 0.25f;
    check_rope(p, 37, 2, 80, 4);
  }
}

TEST_CASE("rope: Llama 3 scaling (all three frequency bands)") {
  RopeParams p;
  p.theta = 500000.0f;
  p.llama3_factor = 8.0f;
  p.llama3_low_freq_factor = 1.0f;
  p.llama3_high_freq_factor = 4.0f;
  p.llama3_original_context = 8192;
  for (bool neox : {false, true}) {
    CAPTURE(neox);
    p.neox = neox;
    check_rope(p, 37, 3, 64, 5);
    check_rope(p, 5, 2, 128, 6);
  }
  // The test really covers the middle band: some wavelength lies in [2048, 8192].
  bool has_medium = false;
  for (int j = 0; j < 32; ++j) {
    const double wavelen = 2 * std::numbers::pi / std::pow(500000.0, -2.0 * j / 64);
    has_medium |= wavelen >= 2048 && wavelen <= 8192;
  }
  CHECK(has_medium);
}

TEST_CASE("rope: a row is rotated the same alone and in a batch") {
  auto backend = make_cpu_backend(2);
  std::mt19937 rng(8);
  const int64_t t = 16, heads = 3, hd = 64;
  const auto x = random_floats(rng, static_cast<size_t>(t * heads * hd));
  std::vector<int32_t> pos(t);
  for (auto& q : pos) q = static_cast<int32_t>(rng() % 5000);
  HostTensor xt(*backend, DType::F32, {t, heads, hd}), pt(*backend, DType::I32, {t});
  xt.set(*backend, x);
  pt.set(*backend, pos);
  RopeParams p;
  backend->rope(xt.tensor, pt.tensor, p);
  const auto batch = xt.get(*backend);
  HostTensor one(*backend, DType::F32, {1, heads, hd}), p1(*backend, DType::I32, {1});
  one.set(*backend, std::vector<float>(x.begin() + 7 * heads * hd, x.begin() + 8 * heads * hd));
  p1.set(*backend, std::vector<int32_t>{pos[7]});
  backend->rope(one.tensor, p1.tensor, p);
  CHECK(bits_equal(one.get(*backend), std::vector<float>(batch.begin() + 7 * heads * hd, batch.begin() + 8 * heads * hd)));
}

}  // namespace sluice::backends::test
