// The signal ops' half of sluice_bench_ops: the codec decoder's convolutions
// (Qwen3TTSTokenizerV2Decoder in qwen_tts/core/tokenizer_12hz/
// modeling_qwen3_tts_tokenizer_v2.py) at their real shapes, for one 80 ms frame and
// for 50 frames, printing GFLOP/s (2 multiply-adds counted per weight tap and output
// element), the convolutions with F32 weights and, beside them, with int16 ones and
// with F32 panels (backends/conv_int16.h, conv_panels.h: the codec's CPU form) where
// the backend has them.
#include <functional>
#include <memory>
#include <span>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/conv_int16.h"
#include "backends/conv_panels.h"
#include "backends/cpu/bench_ops.h"

namespace sluice::backends::bench {
namespace {

enum class Op { conv1d, conv_transpose1d, depthwise_conv1d, snake };

struct Shape {
  const char* what;
  Op op;
  int64_t in_rows;  // per frame: output rows of a conv, input rows of a transposed conv
  int64_t cin, cout, taps;
  int param;  // dilation, or stride
};

// One frame of the decoder: 4 rows after the ×4 upsampler, then ×8 ×5 ×4 ×3.
constexpr Shape kShapes[] = {
    {"upsample convT s2", Op::conv_transpose1d, 1, 1024, 1024, 1, 2},
    {"upsample dwconv k7", Op::depthwise_conv1d, 4, 1024, 1024, 7, 1},
    {"dec.0 conv k7", Op::conv1d, 4, 1024, 1536, 7, 1},
    {"block1 convT s8", Op::conv_transpose1d, 4, 1536, 768, 2, 8},
    {"res768 conv k7 d9", Op::conv1d, 32, 768, 768, 7, 9},
    {"res768 conv k1", Op::conv1d, 32, 768, 768, 1, 1},
    {"block2 convT s5", Op::conv_transpose1d, 32, 768, 384, 2, 5},
    {"res384 conv k7 d3", Op::conv1d, 160, 384, 384, 7, 3},
    {"res384 conv k1", Op::conv1d, 160, 384, 384, 1, 1},
    {"block3 convT s4", Op::conv_transpose1d, 160, 384, 192, 2, 4},
    {"res192 conv k7 d1", Op::conv1d, 640, 192, 192, 7, 1},
    {"res192 conv k1", Op::conv1d, 640, 192, 192, 1, 1},
    {"block4 convT s3", Op::conv_transpose1d, 640, 192, 96, 2, 3},
    {"res96 conv k7 d9", Op::conv1d, 1920, 96, 96, 7, 9},
    {"res96 conv k1", Op::conv1d, 1920, 96, 96, 1, 1},
    {"dec.6 conv k7 ->1", Op::conv1d, 1920, 96, 1, 7, 1},
    // SnakeBeta runs 7 times per block (before the upsampler and twice per residual unit).
    {"snake 768", Op::snake, 32, 768, 768, 1, 1},
    {"snake 96", Op::snake, 1920, 96, 96, 1, 1},
};

struct Owned {
  std::unique_ptr<Buffer> buffer;
  Tensor tensor;
};

Owned make_tensor(Backend& backend, std::vector<int64_t> shape, std::mt19937& rng) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : values) v = dist(rng);
  Owned t;
  t.buffer = backend.allocate(values.size() * sizeof(float));
  t.tensor = shape.size() == 1 ? Tensor::make(t.buffer.get(), 0, DType::F32, {shape[0]})
                               : Tensor::make(t.buffer.get(), 0, DType::F32, {shape[0], shape[1]});
  backend.upload(t.tensor, std::as_bytes(std::span(values)));
  return t;
}

// Random conv weights [rows, taps * cin] in conv_int16.h's I16 form.
Owned make_int16_weight(Backend& backend, int64_t rows, int64_t taps, int64_t cin, std::mt19937& rng) {
  std::vector<float> values(static_cast<size_t>(rows * taps * cin));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : values) v = dist(rng);
  const std::vector<int16_t> q = pack_int16_conv_weights(values, rows, taps, cin);
  Owned t;
  t.buffer = backend.allocate(q.size() * sizeof(int16_t));
  t.tensor = Tensor::make(t.buffer.get(), 0, DType::I16, {rows, static_cast<int64_t>(q.size()) / rows});
  backend.upload(t.tensor, std::as_bytes(std::span(q)));
  return t;
}

// Random conv weights [rows, taps * cin] as conv_panels.h's F32 panels.
Owned make_panel_weight(Backend& backend, int64_t rows, int64_t taps, int64_t cin, std::mt19937& rng) {
  std::vector<float> values(static_cast<size_t>(rows * taps * cin));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : values) v = dist(rng);
  const std::vector<float> panels = pack_conv_panels(values, rows);
  Owned t;
  t.buffer = backend.allocate(panels.size() * sizeof(float));
  t.tensor = Tensor::make(t.buffer.get(), 0, DType::F32, {conv_panel_count(rows), taps * cin, kConvPanelColumns});
  backend.upload(t.tensor, std::as_bytes(std::span(panels)));
  return t;
}

}  // namespace

void bench_signal_ops(Backend& backend) {
  std::mt19937 rng(42);
  const bool int16 = backend.device() == DeviceKind::cpu;  // only the CPU backend has int16 and panel convs
  std::printf("%-20s %7s %-22s %10s %10s %10s %10s %10s %10s\n", "op", "frames", "x -> out", "ms/call", "GFLOP/s",
              int16 ? "int16 ms" : "", int16 ? "GFLOP/s" : "", int16 ? "panels ms" : "", int16 ? "GFLOP/s" : "");
  for (int64_t frames : {1, 50}) {
    double total_seconds = 0, total_flops = 0, total_int16 = 0, total_panels = 0;
    for (const Shape& s : kShapes) {
      const int64_t rows = s.in_rows * frames;
      Owned x, w, bias, out, w16, w_panels;
      double flops = 0;
      std::function<void()> call, call16, call_panels;
      if (s.op == Op::conv1d) {
        x = make_tensor(backend, {rows + (s.taps - 1) * s.param, s.cin}, rng);
        w = make_tensor(backend, {s.cout, s.taps * s.cin}, rng);
        bias = make_tensor(backend, {s.cout}, rng);
        out = make_tensor(backend, {rows, s.cout}, rng);
        flops = 2.0 * static_cast<double>(rows * s.cout * s.taps * s.cin);
        call = [&] { backend.conv1d(x.tensor, w.tensor, bias.tensor, s.param, out.tensor); };
        if (int16) {
          w16 = make_int16_weight(backend, s.cout, s.taps, s.cin, rng);
          call16 = [&] { backend.conv1d(x.tensor, w16.tensor, bias.tensor, s.param, out.tensor); };
          w_panels = make_panel_weight(backend, s.cout, s.taps, s.cin, rng);
          call_panels = [&] { backend.conv1d(x.tensor, w_panels.tensor, bias.tensor, s.param, out.tensor); };
        }
      } else if (s.op == Op::conv_transpose1d) {
        x = make_tensor(backend, {rows + s.taps - 1, s.cin}, rng);
        w = make_tensor(backend, {s.param * s.cout, s.taps * s.cin}, rng);
        bias = make_tensor(backend, {s.cout}, rng);
        out = make_tensor(backend, {rows * s.param, s.cout}, rng);
        flops = 2.0 * static_cast<double>(rows * s.param * s.cout * s.taps * s.cin);
        call = [&] { backend.conv_transpose1d(x.tensor, w.tensor, bias.tensor, s.param, out.tensor); };
        if (int16) {
          w16 = make_int16_weight(backend, s.param * s.cout, s.taps, s.cin, rng);
          call16 = [&] { backend.conv_transpose1d(x.tensor, w16.tensor, bias.tensor, s.param, out.tensor); };
          w_panels = make_panel_weight(backend, s.param * s.cout, s.taps, s.cin, rng);
          call_panels = [&] { backend.conv_transpose1d(x.tensor, w_panels.tensor, bias.tensor, s.param, out.tensor); };
        }
      } else if (s.op == Op::snake) {
        x = make_tensor(backend, {rows, s.cin}, rng);
        w = make_tensor(backend, {s.cin}, rng);     // alpha
        bias = make_tensor(backend, {s.cin}, rng);  // inv_beta
        out = make_tensor(backend, {rows, s.cin}, rng);
        flops = 0;  // transcendental: see ms/call
        call = [&] { backend.snake(x.tensor, w.tensor, bias.tensor, out.tensor); };
      } else {
        x = make_tensor(backend, {rows + s.taps - 1, s.cin}, rng);
        w = make_tensor(backend, {s.cin, s.taps}, rng);
        bias = make_tensor(backend, {s.cin}, rng);
        out = make_tensor(backend, {rows, s.cin}, rng);
        flops = 2.0 * static_cast<double>(rows * s.cin * s.taps);
        call = [&] { backend.depthwise_conv1d(x.tensor, w.tensor, bias.tensor, out.tensor); };
      }
      const double per_call = seconds_per_call(call);
      const double per_call16 = call16 ? seconds_per_call(call16) : per_call;
      const double per_call_panels = call_panels ? seconds_per_call(call_panels) : per_call;
      if (flops > 0) total_seconds += per_call, total_flops += flops, total_int16 += per_call16, total_panels += per_call_panels;
      char shape[48];
      std::snprintf(shape, sizeof shape, "[%lld,%lld]->[%lld,%lld]", static_cast<long long>(x.tensor.rows()),
                    static_cast<long long>(s.cin), static_cast<long long>(out.tensor.rows()),
                    static_cast<long long>(out.tensor.cols()));
      std::printf("%-20s %7lld %-22s %10.3f %10.2f", s.what, static_cast<long long>(frames), shape,
                  per_call * 1e3, flops / per_call * 1e-9);
      if (call16) std::printf(" %10.3f %10.2f", per_call16 * 1e3, flops / per_call16 * 1e-9);
      if (call_panels) std::printf(" %10.3f %10.2f", per_call_panels * 1e3, flops / per_call_panels * 1e-9);
      std::printf("\n");
    }
    // The convolution rows only. The residual units run each k7 conv three times
    // (d = 1, 3, 9) and each k1 conv three times; the table lists one of each, so
    // this total is a lower bound of the decoder's conv time, not the decoder itself.
    std::printf("%-20s %7lld %-22s %10.3f %10.2f", "sum of the rows", static_cast<long long>(frames), "",
                total_seconds * 1e3, total_flops / total_seconds * 1e-9);
    if (int16) std::printf(" %10.3f %10.2f %10.3f %10.2f", total_int16 * 1e3, total_flops / total_int16 * 1e-9,
                           total_panels * 1e3, total_flops / total_panels * 1e-9);
    std::printf("\n");
  }
}

}  // namespace sluice::backends::bench
