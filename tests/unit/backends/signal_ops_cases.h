#pragma once
// The signal ops of backend.h (activate with each activation, clamp, add_bias,
// snake and the three causal convolutions) as test cases that run on any backend: one description
// per op, host inputs, a run over any range of output steps (feeding the step
// range its left-context rows), and a double-precision reference written from
// backend.h's formulas with the F32 error bound each output is held to.
// Used by test_signal_ops.cpp (CPU paths) and cuda/test_cuda_parity_signal.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/conv_int16.h"
#include "backends/conv_panels.h"
#include "tests/unit/backends/backend_test_util.h"

namespace sluice::backends::test {

// How a conv case hands its weights to the backend: backend.h's F32 [rows, k],
// backends/conv_int16.h's I16 rows, or conv_panels.h's F32 panels.
enum class ConvWeightForm { f32, int16, panels };

enum class SignalKind { silu, gelu_erf, elu, sigmoid, tanh, sqrt, log, clamp, add_bias, snake, conv1d, depthwise, conv_transpose };

inline const char* signal_kind_name(SignalKind kind) {
  switch (kind) {
    case SignalKind::silu: return "activate silu";
    case SignalKind::gelu_erf: return "activate gelu_erf";
    case SignalKind::elu: return "activate elu";
    case SignalKind::sigmoid: return "activate sigmoid";
    case SignalKind::tanh: return "activate tanh";
    case SignalKind::sqrt: return "activate sqrt";
    case SignalKind::log: return "activate log";
    case SignalKind::clamp: return "clamp";
    case SignalKind::add_bias: return "add_bias";
    case SignalKind::snake: return "snake";
    case SignalKind::conv1d: return "conv1d";
    case SignalKind::depthwise: return "depthwise_conv1d";
    case SignalKind::conv_transpose: return "conv_transpose1d";
  }
  return "?";
}

// One op with its parameters. A "step" is one output row, or for conv_transpose1d
// one input frame (stride output rows).
struct SignalCase {
  SignalKind kind = SignalKind::silu;
  int64_t cin = 1;    // input channels (all channels of the element-wise ops)
  int64_t cout = 1;   // output channels of conv1d / conv_transpose1d
  int64_t taps = 1;   // k of conv1d / depthwise, m = K / stride of conv_transpose1d
  int param = 1;      // dilation of conv1d, stride of conv_transpose1d
  bool has_bias = false;
  ConvWeightForm conv_weights = ConvWeightForm::f32;  // conv1d / conv_transpose1d
  std::vector<float> w, bias, alpha, inv_beta;

  bool is_elementwise() const { return kind <= SignalKind::snake; }
  int64_t out_cols() const { return kind == SignalKind::conv1d || kind == SignalKind::conv_transpose ? cout : cin; }
  int64_t rows_per_step() const { return kind == SignalKind::conv_transpose ? param : 1; }
  // Input rows before the first step's own row.
  int64_t context() const {
    if (kind == SignalKind::conv1d) return (taps - 1) * param;
    if (kind == SignalKind::depthwise || kind == SignalKind::conv_transpose) return taps - 1;
    return 0;
  }
  std::string describe() const {
    return std::string(signal_kind_name(kind)) + " cin=" + std::to_string(cin) + " cout=" + std::to_string(cout) +
           " taps=" + std::to_string(taps) + " param=" + std::to_string(param) + (has_bias ? " bias" : " no bias");
  }
};

inline SignalCase make_signal_case(SignalKind kind, int64_t cin, int64_t cout, int64_t taps, int param, bool has_bias,
                                   std::mt19937& rng) {
  SignalCase c;
  c.kind = kind;
  c.cin = cin;
  c.cout = cout;
  c.taps = taps;
  c.param = param;
  c.has_bias = has_bias;
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f), positive(0.2f, 3.0f);
  auto fill = [&](std::vector<float>& v, size_t n) {
    v.resize(n);
    for (float& x : v) x = unit(rng);
  };
  switch (kind) {
    case SignalKind::conv1d: fill(c.w, size_t(cout * taps * cin)); break;
    case SignalKind::depthwise: fill(c.w, size_t(cin * taps)); break;
    case SignalKind::conv_transpose: fill(c.w, size_t(param * cout * taps * cin)); break;
    case SignalKind::snake:
      c.alpha.resize(size_t(cin));
      c.inv_beta.resize(size_t(cin));
      for (float& a : c.alpha) a = positive(rng);
      for (float& b : c.inv_beta) b = positive(rng);
      break;
    default: break;
  }
  if (has_bias || kind == SignalKind::add_bias) {
    c.has_bias = true;
    fill(c.bias, size_t(c.out_cols()));
  }
  return c;
}

// Odd sizes: channels off multiples of 16, every dilation and stride of the codec.
inline std::vector<SignalCase> signal_test_cases(std::mt19937& rng) {
  std::vector<SignalCase> cases;
  for (SignalKind kind : {SignalKind::silu, SignalKind::gelu_erf, SignalKind::elu, SignalKind::sigmoid, SignalKind::tanh,
                          SignalKind::sqrt, SignalKind::log, SignalKind::clamp, SignalKind::add_bias,
                          SignalKind::snake})
    for (int64_t channels : {1, 19, 96})
      cases.push_back(make_signal_case(kind, channels, channels, 1, 1, false, rng));
  for (bool bias : {false, true}) {
    for (int dilation : {1, 3, 9}) {
      cases.push_back(make_signal_case(SignalKind::conv1d, 7, 5, 7, dilation, bias, rng));
      cases.push_back(make_signal_case(SignalKind::conv1d, 37, 19, 3, dilation, bias, rng));
    }
    cases.push_back(make_signal_case(SignalKind::conv1d, 100, 33, 1, 1, bias, rng));   // a Linear layer
    cases.push_back(make_signal_case(SignalKind::conv1d, 16, 1, 7, 1, bias, rng));     // the final 96 -> 1
    cases.push_back(make_signal_case(SignalKind::conv1d, 48, 13, 2, 2, bias, rng));
    for (int64_t channels : {1, 23, 64}) cases.push_back(make_signal_case(SignalKind::depthwise, channels, channels, 7, 1, bias, rng));
    for (int stride : {2, 3, 4, 5, 8}) cases.push_back(make_signal_case(SignalKind::conv_transpose, 21, 11, 2, stride, bias, rng));
    cases.push_back(make_signal_case(SignalKind::conv_transpose, 33, 6, 1, 2, bias, rng));  // K = s: no context
    cases.push_back(make_signal_case(SignalKind::conv_transpose, 17, 9, 3, 3, bias, rng));
  }
  return cases;
}

inline std::vector<float> random_signal_input(const SignalCase& c, int64_t steps, std::mt19937& rng) {
  // sqrt and log get their domain, from tiny to large (the speaker encoder's
  // magnitudes and clamped mel energies).
  const bool positive = c.kind == SignalKind::sqrt || c.kind == SignalKind::log;
  std::uniform_real_distribution<float> dist(positive ? -12.0f : -2.0f, positive ? 6.0f : 2.0f);
  std::vector<float> x(size_t((steps + c.context()) * c.cin));
  for (float& v : x) v = positive ? std::exp(dist(rng)) : dist(rng);
  return x;
}

// Runs the case on `backend` for `steps` steps: x holds steps + context() rows
// of cin. pad > 0 gives x and out strided rows (and checks their padding is left
// alone); alias computes an element-wise op in place.
inline std::vector<float> run_signal(Backend& backend, const SignalCase& c, const std::vector<float>& x, int64_t steps,
                                     int64_t pad = 0, bool alias = false) {
  const int64_t in_rows = steps + c.context(), out_rows = steps * c.rows_per_step();
  REQUIRE(static_cast<int64_t>(x.size()) == in_rows * c.cin);
  BackendTensor xt(backend, DType::F32, {in_rows, c.cin}, pad);
  xt.upload(x);
  BackendTensor out(backend, DType::F32, {out_rows, c.out_cols()}, pad);
  out.upload(std::vector<float>(size_t(out_rows * c.out_cols()), 7.0f));
  const BackendTensor& dst = alias ? xt : out;
  BackendTensor w, bias, alpha, inv_beta;
  if (!c.w.empty()) {
    const int64_t w_rows = c.kind == SignalKind::depthwise        ? c.cin
                           : c.kind == SignalKind::conv_transpose ? c.param * c.cout
                                                                  : c.cout;
    const int64_t taps = static_cast<int64_t>(c.w.size()) / w_rows / c.cin;
    if (c.conv_weights == ConvWeightForm::int16) {
      const std::vector<int16_t> packed = pack_int16_conv_weights(c.w, w_rows, taps, c.cin);
      w = BackendTensor(backend, DType::I16, {w_rows, static_cast<int64_t>(packed.size()) / w_rows});
      w.upload(packed);
    } else if (c.conv_weights == ConvWeightForm::panels) {
      w = BackendTensor(backend, DType::F32, {conv_panel_count(w_rows), taps * c.cin, kConvPanelColumns});
      w.upload(pack_conv_panels(c.w, w_rows));
    } else {
      w = BackendTensor(backend, DType::F32, {w_rows, static_cast<int64_t>(c.w.size()) / w_rows});
      w.upload(c.w);
    }
  }
  if (c.has_bias) {
    bias = BackendTensor(backend, DType::F32, {c.out_cols()});
    bias.upload(c.bias);
  }
  if (c.kind == SignalKind::snake) {
    alpha = BackendTensor(backend, DType::F32, {c.cin});
    inv_beta = BackendTensor(backend, DType::F32, {c.cin});
    alpha.upload(c.alpha);
    inv_beta.upload(c.inv_beta);
  }
  const Tensor no_bias;
  const Tensor& b = c.has_bias ? bias.tensor : no_bias;
  switch (c.kind) {
    case SignalKind::silu: backend.activate(xt.tensor, Backend::Activation::silu, dst.tensor); break;
    case SignalKind::gelu_erf: backend.activate(xt.tensor, Backend::Activation::gelu_erf, dst.tensor); break;
    case SignalKind::elu: backend.activate(xt.tensor, Backend::Activation::elu, dst.tensor); break;
    case SignalKind::sigmoid: backend.activate(xt.tensor, Backend::Activation::sigmoid, dst.tensor); break;
    case SignalKind::tanh: backend.activate(xt.tensor, Backend::Activation::tanh, dst.tensor); break;
    case SignalKind::sqrt: backend.activate(xt.tensor, Backend::Activation::sqrt, dst.tensor); break;
    case SignalKind::log: backend.activate(xt.tensor, Backend::Activation::log, dst.tensor); break;
    case SignalKind::clamp: backend.clamp(xt.tensor, -0.5f, 0.25f, dst.tensor); break;
    case SignalKind::add_bias: backend.add_bias(xt.tensor, bias.tensor, dst.tensor); break;
    case SignalKind::snake: backend.snake(xt.tensor, alpha.tensor, inv_beta.tensor, dst.tensor); break;
    case SignalKind::conv1d: backend.conv1d(xt.tensor, w.tensor, b, c.param, dst.tensor); break;
    case SignalKind::depthwise: backend.depthwise_conv1d(xt.tensor, w.tensor, b, dst.tensor); break;
    case SignalKind::conv_transpose: backend.conv_transpose1d(xt.tensor, w.tensor, b, c.param, dst.tensor); break;
  }
  CHECK(dst.padding_intact());
  return dst.download();
}

// The case's output computed chunk by chunk: steps [s, s + n) get x rows
// [s, s + n + context), chunk sizes cycling through `sizes`.
inline std::vector<float> run_signal_chunked(Backend& backend, const SignalCase& c, const std::vector<float>& x,
                                             int64_t steps, const std::vector<int64_t>& sizes) {
  std::vector<float> out;
  size_t next = 0;
  for (int64_t s = 0; s < steps;) {
    const int64_t n = std::min(sizes[next++ % sizes.size()], steps - s);
    const std::vector<float> chunk_x(x.begin() + s * c.cin, x.begin() + (s + n + c.context()) * c.cin);
    const std::vector<float> y = run_signal(backend, c, chunk_x, n);
    out.insert(out.end(), y.begin(), y.end());
    s += n;
  }
  return out;
}

// backend.h's formula in double for every output element, and the F32 error it
// may carry: `bound` per element.
struct SignalReference {
  std::vector<double> value, bound;
};

inline SignalReference signal_reference(const SignalCase& c, const std::vector<float>& x, int64_t steps) {
  const int64_t rows = steps * c.rows_per_step(), cols = c.out_cols();
  SignalReference ref{std::vector<double>(size_t(rows * cols)), std::vector<double>(size_t(rows * cols))};
  const double u = std::ldexp(1.0, -24);
  auto X = [&](int64_t r, int64_t ch) { return double(x[size_t(r * c.cin + ch)]); };
  auto B = [&](int64_t o) { return c.has_bias ? double(c.bias[size_t(o)]) : 0.0; };
  // A conv output: one FMA rounding per lane step (taps * ceil(cin/16) of them),
  // four for the lane tree, one for the bias: (n + 6) u of the absolute sum to first order.
  // Panel weights (conv_panel_kernel.h): one chain, a rounding per product, and the bias.
  const double conv_rounds = c.conv_weights == ConvWeightForm::panels ? double(c.taps * c.cin + 2)
                                                                      : double(c.taps * ((c.cin + 15) / 16) + 8);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < cols; ++o) {
      double v = 0, mag = 0;
      const double xv = c.is_elementwise() ? X(r, o) : 0.0;
      switch (c.kind) {
        case SignalKind::silu:
          v = xv / (1.0 + std::exp(-xv));
          mag = 1e-6 * (std::fabs(v) + std::fabs(xv));
          break;
        case SignalKind::gelu_erf:
          v = 0.5 * xv * (1.0 + std::erf(xv / std::sqrt(2.0)));
          mag = 1e-6 * (std::fabs(v) + std::fabs(xv));  // 1 + erf cancels for x << 0: absolute in |x|
          break;
        case SignalKind::elu:
          v = xv > 0 ? xv : std::expm1(xv);
          mag = 1e-6 * std::fabs(v);  // expm1f: a few ulp
          break;
        case SignalKind::sigmoid:
          v = 1.0 / (1.0 + std::exp(-xv));
          mag = 1e-6 * std::fabs(v);
          break;
        case SignalKind::tanh:
          v = std::tanh(xv);
          mag = 1e-6 * std::fabs(v);
          break;
        case SignalKind::sqrt:
          v = std::sqrt(xv);
          mag = u * std::fabs(v);  // correctly rounded
          break;
        case SignalKind::log:
          v = std::log(xv);
          mag = 1e-6 * std::fabs(v) + 1e-12;  // a few ulp of the result
          break;
        case SignalKind::clamp:
          v = std::min(std::max(xv, -0.5), 0.25);
          break;
        case SignalKind::add_bias:
          v = double(float(xv + B(o)));  // one correctly rounded F32 add: exact
          break;
        case SignalKind::snake: {
          const double s = std::sin(double(c.alpha[size_t(o)]) * xv);
          v = xv + double(c.inv_beta[size_t(o)]) * s * s;
          // sinf of an F32-rounded angle: |angle| u of the argument, a few ulp of the result.
          mag = 1e-6 * (std::fabs(xv) + double(c.inv_beta[size_t(o)]) * (1.0 + std::fabs(c.alpha[size_t(o)] * xv)));
          break;
        }
        case SignalKind::conv1d:
          v = B(o);
          mag = std::fabs(v);
          for (int64_t j = 0; j < c.taps; ++j)
            for (int64_t ch = 0; ch < c.cin; ++ch) {
              const double p = double(c.w[size_t(o * c.taps * c.cin + j * c.cin + ch)]) * X(r + j * c.param, ch);
              v += p;
              mag += std::fabs(p);
            }
          mag *= conv_rounds * u;
          break;
        case SignalKind::depthwise:
          v = B(o);
          mag = std::fabs(v);
          for (int64_t j = 0; j < c.taps; ++j) {
            const double p = double(c.w[size_t(o * c.taps + j)]) * X(r + j, o);
            v += p;
            mag += std::fabs(p);
          }
          mag *= double(2 * c.taps + 2) * u;
          break;
        case SignalKind::conv_transpose: {
          const int64_t t = r / c.param, phase = r % c.param;
          v = B(o);
          mag = std::fabs(v);
          for (int64_t q = 0; q < c.taps; ++q)
            for (int64_t ch = 0; ch < c.cin; ++ch) {
              const double p =
                  double(c.w[size_t((phase * c.cout + o) * c.taps * c.cin + q * c.cin + ch)]) * X(t + q, ch);
              v += p;
              mag += std::fabs(p);
            }
          mag *= conv_rounds * u;
          break;
        }
      }
      ref.value[size_t(r * cols + o)] = v;
      ref.bound[size_t(r * cols + o)] = mag + 1e-30;
    }
  }
  return ref;
}

// How many outputs miss the reference by more than their bound (the worst one
// is reported).
inline int64_t signal_misses(const std::vector<float>& got, const SignalReference& ref) {
  REQUIRE(got.size() == ref.value.size());
  int64_t misses = 0;
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - ref.value[i]);
    if (!(err <= ref.bound[i])) {
      ++misses;
      if (!(err <= worst)) worst = err, worst_at = i;
    }
  }
  if (misses > 0)
    MESSAGE("worst miss at " << worst_at << ": got " << got[worst_at] << ", want " << ref.value[worst_at]
                             << " within " << ref.bound[worst_at]);
  return misses;
}

}  // namespace sluice::backends::test
