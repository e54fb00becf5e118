// The conv tile's narrow form (conv_kernel.h: fewer than 16 input channels, the
// weights transposed, 16 output columns side by side) against its row-dot form on
// the same arguments: the same bits on every kernel path, for conv1d (dilations,
// with and without bias) and conv_transpose1d's phased columns, including column
// counts that leave a partial block and signed zeros.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/conv_kernel.h"
#include "backends/cpu/quant/cpu_features.h"

namespace sluice::backends::cpu::unit_backends_cpu_test_conv_narrow {
namespace {

std::vector<float> random_values(std::mt19937& rng, size_t n) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  // Some exact zeros of both signs: a lane whose chain is -0 must come out as in
  // the row-dot form.
  for (size_t i = 0; i < n; i += 11) v[i] = (i / 11) % 2 ? -0.0f : 0.0f;
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("conv tile: the narrow form (Cin < 16) gives the row-dot form's bits on every path") {
  std::mt19937 rng(21);
  struct Shape {
    int64_t cin, taps, step, period, phases;
  };
  const Shape shapes[] = {{1, 7, 1, 64, 1},  {1, 3, 2, 20, 1}, {2, 5, 1, 16, 1}, {3, 3, 3, 33, 1},
                          {7, 1, 1, 8, 1},   {15, 4, 1, 40, 1}, {1, 2, 1, 24, 4}, {5, 2, 1, 12, 3}};
  for (const KernelPath path : runnable_kernel_paths()) {
    const ConvTile tile = conv_tile(path);
    for (const Shape& s : shapes) {
      for (bool with_bias : {false, true}) {
        CAPTURE(static_cast<int>(path));
        CAPTURE(s.cin);
        CAPTURE(s.taps);
        CAPTURE(s.period);
        const int64_t rows = 37, columns = s.period * s.phases, k = s.taps * s.cin;
        const int64_t x_rows = rows + (s.taps - 1) * s.step, x_stride = s.cin + 2, w_stride = k + 1;
        const std::vector<float> x = random_values(rng, static_cast<size_t>(x_rows * x_stride));
        const std::vector<float> w = random_values(rng, static_cast<size_t>(columns * w_stride));
        const std::vector<float> bias = random_values(rng, static_cast<size_t>(s.period));
        const int64_t y_stride = s.phases * s.period;
        std::vector<float> wide(static_cast<size_t>(rows * y_stride), 7.0f), narrow = wide;
        ConvArgs args{.x = x.data(), .x_stride = x_stride, .step = s.step, .w = w.data(), .w_stride = w_stride,
                      .cin = s.cin, .taps = s.taps, .bias = with_bias ? bias.data() : nullptr, .y = wide.data(),
                      .y_stride = y_stride, .period = s.period, .phase_stride = s.period};
        for (int64_t o = 0; o < columns; o += 16) tile(args, 0, rows, o, std::min(columns, o + 16));
        std::vector<float> transposed;
        transpose_narrow_weights(w.data(), w_stride, columns, k, transposed);
        args.w_narrow = transposed.data();
        args.narrow_columns = static_cast<int64_t>(transposed.size()) / k;
        args.y = narrow.data();
        // Row ranges that do not start at 0, as the pool's tiles do.
        for (int64_t o = 0; o < columns; o += 16) {
          tile(args, 0, 5, o, std::min(columns, o + 16));
          tile(args, 5, rows, o, std::min(columns, o + 16));
        }
        CHECK(same_bits(narrow, wide));
      }
    }
  }
}

}  // namespace sluice::backends::cpu
