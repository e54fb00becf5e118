// Norms, element-wise ops, softmax and embedding against double-precision
// references written from the definitions, on shapes with T = 1 and 37 and row
// lengths that are not multiples of the vector width.
// Tolerances: |got - ref| <= 2e-6 * |ref| + 1e-6 * scale, where `scale` is the
// size of the inputs feeding the element (a few F32 roundings plus libm's
// exp/tanh, which are within 1-2 ulp); embed must be exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/exp_approx.h"
#include "backends/cpu/half.h"
#include "backends/cpu/quant/cpu_features.h"
#include "backends/cpu/silu_row.h"
#include "cpu_test_util.h"
#include "tests/unit/backends/backend_test_util.h"

namespace sluice::backends::test::unit_backends_cpu_test_ops {
namespace {

struct Shape { int64_t t, d; };
constexpr Shape kShapes[] = {{1, 576}, {37, 100}, {3, 7}, {37, 1024}};

bool close(double got, double ref, double scale) {
  return std::fabs(got - ref) <= 2e-6 * std::fabs(ref) + 1e-6 * scale;
}

template <class Ref>
void check_rows(const std::vector<float>& got, int64_t t, int64_t d, Ref&& ref_and_scale) {
  int failures = 0;
  for (int64_t i = 0; i < t; ++i)
    for (int64_t k = 0; k < d; ++k) {
      const auto [ref, scale] = ref_and_scale(i, k);
      const double g = got[static_cast<size_t>(i * d + k)];
      if (!close(g, ref, scale) && failures++ < 3) {
        INFO("row " << i << " col " << k << ": " << g << " vs " << ref);
        CHECK(close(g, ref, scale));
      }
    }
  CHECK(failures == 0);
}

}  // namespace

TEST_CASE("ops: rms_norm and layer_norm, in place and out of place") {
  auto backend = make_cpu_backend(2);
  std::mt19937 rng(21);
  for (const Shape s : kShapes) {
    CAPTURE(s.t);
    CAPTURE(s.d);
    const auto x = random_floats(rng, static_cast<size_t>(s.t * s.d), -3.0f, 5.0f);
    const auto w = random_floats(rng, static_cast<size_t>(s.d), 0.5f, 1.5f);
    const auto b = random_floats(rng, static_cast<size_t>(s.d));
    HostTensor xt(*backend, DType::F32, {s.t, s.d}), out(*backend, DType::F32, {s.t, s.d});
    HostTensor wt(*backend, DType::F32, {s.d}), bt(*backend, DType::F32, {s.d});
    wt.set(*backend, w);
    bt.set(*backend, b);
    const float eps = 1e-5f;

    xt.set(*backend, x);
    backend->rms_norm(xt.tensor, wt.tensor, eps, out.tensor);
    const auto rms = out.get(*backend);
    backend->rms_norm(xt.tensor, wt.tensor, eps, xt.tensor);  // aliased
    CHECK(bits_equal(xt.get(*backend), rms));
    check_rows(rms, s.t, s.d, [&](int64_t i, int64_t k) {
      double ss = 0;
      for (int64_t j = 0; j < s.d; ++j) ss += double(x[size_t(i * s.d + j)]) * x[size_t(i * s.d + j)];
      const double inv = 1.0 / std::sqrt(ss / double(s.d) + eps);
      return std::pair{x[size_t(i * s.d + k)] * inv * w[size_t(k)], 1.0};
    });

    for (bool with_bias : {true, false}) {
      CAPTURE(with_bias);
      xt.set(*backend, x);
      backend->layer_norm(xt.tensor, wt.tensor, with_bias ? bt.tensor : Tensor{}, eps, out.tensor);
      check_rows(out.get(*backend), s.t, s.d, [&](int64_t i, int64_t k) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < s.d; ++j) mean += x[size_t(i * s.d + j)];
        mean /= double(s.d);
        for (int64_t j = 0; j < s.d; ++j) var += (x[size_t(i * s.d + j)] - mean) * (x[size_t(i * s.d + j)] - mean);
        var /= double(s.d);
        const double ref = (x[size_t(i * s.d + k)] - mean) / std::sqrt(var + eps) * w[size_t(k)] +
                           (with_bias ? b[size_t(k)] : 0.0);
        // (x - mean) is formed in F32: its rounding is relative to |x|, not to the result.
        return std::pair{ref, 1.0 + std::fabs(x[size_t(i * s.d + k)]) / std::sqrt(var + eps)};
      });
    }
  }
}

TEST_CASE("ops: swiglu, geglu, add, scale") {
  auto backend = make_cpu_backend(2);
  std::mt19937 rng(22);
  for (const Shape s : kShapes) {
    CAPTURE(s.t);
    CAPTURE(s.d);
    const size_t n = static_cast<size_t>(s.t * s.d);
    const auto g = random_floats(rng, n, -8.0f, 8.0f);
    const auto u = random_floats(rng, n, -2.0f, 2.0f);
    HostTensor gt(*backend, DType::F32, {s.t, s.d}), ut(*backend, DType::F32, {s.t, s.d});
    HostTensor out(*backend, DType::F32, {s.t, s.d});
    ut.set(*backend, u);
    auto at = [&](const std::vector<float>& v, int64_t i, int64_t k) { return double(v[size_t(i * s.d + k)]); };

    gt.set(*backend, g);
    backend->swiglu(gt.tensor, ut.tensor, gt.tensor);  // out aliases gate
    check_rows(gt.get(*backend), s.t, s.d, [&](int64_t i, int64_t k) {
      const double x = at(g, i, k);
      return std::pair{x / (1.0 + std::exp(-x)) * at(u, i, k), std::fabs(x * at(u, i, k))};
    });

    gt.set(*backend, g);
    backend->geglu(gt.tensor, ut.tensor, out.tensor);
    check_rows(out.get(*backend), s.t, s.d, [&](int64_t i, int64_t k) {
      const double x = at(g, i, k);
      const double gelu = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
      return std::pair{gelu * at(u, i, k), std::fabs(x * at(u, i, k))};
    });

    backend->add(gt.tensor, ut.tensor, out.tensor);
    check_rows(out.get(*backend), s.t, s.d,
               [&](int64_t i, int64_t k) { return std::pair{at(g, i, k) + at(u, i, k), 0.0}; });

    backend->scale(gt.tensor, 0.125f, gt.tensor);
    CHECK(gt.get(*backend)[n - 1] == g[n - 1] * 0.125f);  // exact: power of two
    check_rows(gt.get(*backend), s.t, s.d, [&](int64_t i, int64_t k) { return std::pair{at(g, i, k) * 0.125, 0.0}; });
  }
}

TEST_CASE("ops: swiglu and geglu give an element the same bits in a vector lane and in the scalar tail") {
  // (swiglu runs libm's expf element by element; geglu is vectorized.)
  // The loop runs 4 (SSE) or more lanes at a time and finishes a row one element at
  // a time: each input is computed once in a long row (its lane) and once alone.
  auto backend = make_cpu_backend(1);
  std::mt19937 rng(23);
  std::vector<float> g = random_floats(rng, 61, -12.0f, 12.0f);
  const std::vector<float> special = {0.0f, -0.0f, -86.9f, -87.0f, -87.5f, -100.0f, 100.0f, 1e-20f, -1e-20f,
                                      std::numeric_limits<float>::quiet_NaN(), 3.5f};
  std::copy(special.begin(), special.end(), g.begin());
  const std::vector<float> u(g.size(), 1.5f);
  const auto n = static_cast<int64_t>(g.size());
  HostTensor row(*backend, DType::F32, {1, n}), ones(*backend, DType::F32, {1, n}), out(*backend, DType::F32, {1, n});
  HostTensor one(*backend, DType::F32, {1, 1}), one_u(*backend, DType::F32, {1, 1}), one_out(*backend, DType::F32, {1, 1});
  ones.set(*backend, u);
  one_u.set(*backend, std::vector<float>{1.5f});
  for (bool gelu : {false, true}) {
    CAPTURE(gelu);
    row.set(*backend, g);
    if (gelu) backend->geglu(row.tensor, ones.tensor, out.tensor);
    else backend->swiglu(row.tensor, ones.tensor, out.tensor);
    const std::vector<float> lanes = out.get(*backend);
    CHECK(std::isnan(lanes[9]));  // NaN in, NaN out
    CHECK(lanes[5] == 0.0f);      // far left: 0 (-0 or +0)
    CHECK(lanes[6] == 150.0f);    // far right: the identity
    for (size_t i = 0; i < g.size(); ++i) {
      CAPTURE(i);
      one.set(*backend, std::vector<float>{g[i]});
      if (gelu) backend->geglu(one.tensor, one_u.tensor, one_out.tensor);
      else backend->swiglu(one.tensor, one_u.tensor, one_out.tensor);
      CHECK(bits_equal(one_out.get(*backend), {lanes[i]}));
    }
  }
}

TEST_CASE("ops: SwiGLU's vectorized exp gives libm's expf bits on every path") {
  // expf_libm_bits either vouches for its result (then it must be std::exp's) or
  // says to ask libm; the row kernels of every ISA must equal the scalar libm loop.
  std::mt19937 rng(24);
  std::uniform_real_distribution<float> wide(-90.0f, 90.0f), narrow(-12.0f, 12.0f);
  std::vector<float> g;
  for (int i = 0; i < 400000; ++i) g.push_back(i % 2 ? wide(rng) : narrow(rng));
  for (float special : {0.0f, -0.0f, 1.0f, -1.0f, 79.9f, -79.9f, 88.0f, -88.0f, 100.0f, -100.0f, 1e-30f, -1e-30f})
    g.push_back(special);
  int64_t vouched = 0;
  for (const float v : g) {
    int32_t exact = 0;
    const float f = cpu::expf_libm_bits(-v, &exact);
    if (exact == 0) continue;
    ++vouched;
    if (f != std::exp(-v)) {
      INFO("x = " << v);
      CHECK(f == std::exp(-v));
    }
  }
  CHECK(vouched > static_cast<int64_t>(g.size()) * 9 / 10);
  std::vector<float> u(g.size());
  for (size_t i = 0; i < u.size(); ++i) u[i] = narrow(rng);
  std::vector<float> want(g.size());
  for (size_t i = 0; i < g.size(); ++i) want[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  std::vector<std::pair<const char*, cpu::SiluRow>> rows = {{"portable", cpu::silu_times_row_impl}};
  for (cpu::KernelPath path : cpu::runnable_kernel_paths()) {
    if (path == cpu::KernelPath::avx512_vnni) rows.emplace_back("avx512", cpu::avx512_silu_row());
    if (path == cpu::KernelPath::avx2) rows.emplace_back("avx2", cpu::avx2_silu_row());
  }
  MESSAGE("SiLU row kernels checked: " << rows.size());
  for (const auto& [name, row] : rows) {
    CAPTURE(name);
    std::vector<float> y(g.size());
    row(g.data(), u.data(), y.data(), static_cast<int64_t>(g.size()));
    CHECK(bits_equal(y, want));
    std::vector<float> in_place = g;  // y aliasing g, as the MLP calls it
    row(in_place.data(), u.data(), in_place.data(), static_cast<int64_t>(g.size()));
    CHECK(bits_equal(in_place, want));
  }
}

TEST_CASE("ops: mul is the exact product; transpose moves every element, strided rows too") {
  auto backend = make_cpu_backend(2);
  std::mt19937 rng(25);
  for (const Shape s : kShapes) {
    CAPTURE(s.t);
    CAPTURE(s.d);
    const size_t n = static_cast<size_t>(s.t * s.d);
    const auto a = random_floats(rng, n, -3.0f, 3.0f), b = random_floats(rng, n, -3.0f, 3.0f);
    BackendTensor at(*backend, DType::F32, {s.t, s.d}, 3), bt(*backend, DType::F32, {s.t, s.d});
    at.upload(a);
    bt.upload(b);
    backend->mul(at.tensor, bt.tensor, at.tensor);  // out aliases a
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = a[i] * b[i];
    CHECK(bits_equal(at.download(), want));
    CHECK(at.padding_intact());

    // Wider than one 32 x 32 tile in both directions for the larger shapes.
    BackendTensor xt(*backend, DType::F32, {s.t, s.d}, 5), out(*backend, DType::F32, {s.d, s.t}, 2);
    xt.upload(a);
    out.upload(std::vector<float>(n, 0.0f));  // sets the padding the op must leave alone
    backend->transpose(xt.tensor, out.tensor);
    std::vector<float> transposed(n);
    for (int64_t r = 0; r < s.t; ++r)
      for (int64_t c = 0; c < s.d; ++c) transposed[size_t(c * s.t + r)] = a[size_t(r * s.d + c)];
    CHECK(bits_equal(out.download(), transposed));
    CHECK(out.padding_intact());
  }
}

TEST_CASE("ops: softmax rows sum to one and match the definition") {
  auto backend = make_cpu_backend(2);
  std::mt19937 rng(23);
  for (const Shape s : kShapes) {
    CAPTURE(s.t);
    CAPTURE(s.d);
    const auto x = random_floats(rng, static_cast<size_t>(s.t * s.d), -30.0f, 30.0f);
    HostTensor xt(*backend, DType::F32, {s.t, s.d});
    xt.set(*backend, x);
    backend->softmax(xt.tensor, xt.tensor);
    const auto y = xt.get(*backend);
    check_rows(y, s.t, s.d, [&](int64_t i, int64_t k) {
      double max = -INFINITY, sum = 0;
      for (int64_t j = 0; j < s.d; ++j) max = std::max(max, double(x[size_t(i * s.d + j)]));
      for (int64_t j = 0; j < s.d; ++j) sum += std::exp(x[size_t(i * s.d + j)] - max);
      // exp of an F32 argument near 30 carries |arg| ulp of relative error.
      const double ref = std::exp(x[size_t(i * s.d + k)] - max) / sum;
      return std::pair{ref, 0.0 + 64 * ref};
    });
  }
  // A fully masked row gives zeros rather than NaN.
  HostTensor m(*backend, DType::F32, {1, 4});
  m.set(*backend, std::vector<float>(4, -INFINITY));
  backend->softmax(m.tensor, m.tensor);
  CHECK(m.get(*backend) == std::vector<float>(4, 0.0f));
}

TEST_CASE("ops: embed dequantizes exactly the rows asked for") {
  auto backend = make_cpu_backend(2);
  std::mt19937 rng(24);
  const int64_t vocab = 50, d = 64;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_1}) {
    CAPTURE(dtype_name(dtype));
    // Build the table from F32 values; only the bytes matter to the op.
    std::vector<std::byte> bytes(*dtype_bytes(dtype, vocab * d));
    for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0x3F);  // small, finite halves
    auto buffer = backend->wrap_weights(bytes);
    const Tensor table = Tensor::make(buffer.get(), 0, dtype, {vocab, d});
    const std::vector<int32_t> ids = {3, 0, 49, 3, 17};
    HostTensor idt(*backend, DType::I32, {5}), out(*backend, DType::F32, {5, d});
    idt.set(*backend, ids);
    backend->embed(table, idt.tensor, out.tensor);
    const auto y = out.get(*backend);
    std::vector<float> row(static_cast<size_t>(d));
    for (size_t i = 0; i < ids.size(); ++i) {
      cpu::dequantize_row(dtype, bytes.data() + static_cast<size_t>(ids[i]) * table.row_bytes(), row.data(), d);
      CHECK(bits_equal(std::vector<float>(y.begin() + i * d, y.begin() + (i + 1) * d), row));
    }
  }
}

TEST_CASE("backend: buffers, upload/download, fill_zero, memory_info") {
  auto backend = make_cpu_backend(0);
  CHECK(backend->name() == "cpu");
  CHECK(backend->device() == DeviceKind::cpu);
  const MemoryInfo mem = backend->memory_info();
  CHECK(mem.total_bytes > 0);
  CHECK(mem.free_bytes <= mem.total_bytes);
  HostTensor t(*backend, DType::F32, {4, 6});
  CHECK(t.buffer->size() == 96);
  CHECK(t.get(*backend) == std::vector<float>(24, 0.0f));  // fresh buffers are zero
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  t.set(*backend, v);
  CHECK(t.get(*backend) == v);
  backend->fill_zero(t.tensor.slice(1, 2));
  const auto z = t.get(*backend);
  CHECK(z[5] == 5.0f);
  CHECK(z[6] == 0.0f);
  CHECK(z[17] == 0.0f);
  CHECK(z[18] == 18.0f);
  const std::vector<std::byte> bytes(16, std::byte{1});
  auto wrapped = backend->wrap_weights(bytes);
  CHECK(wrapped->size() == 16);
}

}  // namespace sluice::backends::test
