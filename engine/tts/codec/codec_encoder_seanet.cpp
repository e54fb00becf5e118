// CodecEncoder::run_seanet: the SEANet convolutions over the audio, chunk by chunk.
//
// Activations are [rows, channels] F32, time along rows (backend.h's signal
// layout). Every conv is causal and Mimi pads its input with kernel - stride zero
// rows on the left, so a conv reads its chunk's input with that many rows in
// front: the previous chunk's last input rows (zeros before the first chunk),
// kept per conv site in the scratch. Every chunk but the last is a whole number
// of SEANet strides, so each strided conv sees whole strides; the last chunk's
// inputs are padded with zero rows to whole strides, as Mimi pads the clip's end.
//
// A strided conv (kernel m*s, stride s) reads its input viewed as [rows / s, s*C]:
// output t is then an m-tap conv over view rows t .. t + m - 1, which is input
// rows t*s .. t*s + m*s - 1 with the weights in conv1d's tap-major order.
#include <algorithm>

#include "engine/tts/codec/codec_encoder.h"
#include "engine/tts/codec/codec_encoder_scratch.h"

namespace sluice::engine::tts {

using backends::DType;
using backends::Tensor;

namespace {

using Act = backends::Backend::Activation;

// Walks the conv sites in pipeline order: open() puts a site's saved context in
// front of the scratch input and returns the whole input; close() saves its last
// context rows for the next chunk.
class ConvInputs {
 public:
  ConvInputs(backends::Backend& backend, backends::Buffer* buffer, std::span<const Tensor> contexts)
      : backend_(backend), buffer_(buffer), contexts_(contexts) {}

  // [context + rows, channels]; the caller writes rows [context, context + rows).
  Tensor open(int64_t rows, int64_t channels) {
    const Tensor& context = contexts_[site_];
    const int64_t c = context ? context.dim(0) : 0;
    whole_ = Tensor::make(buffer_, 0, DType::F32, {c + rows, channels});
    if (c > 0) backend_.copy(context, whole_.slice(0, c));
    return whole_;
  }

  void close() {
    const Tensor& context = contexts_[site_++];
    if (!context) return;
    const int64_t c = context.dim(0);
    backend_.copy(whole_.slice(whole_.dim(0) - c, c), context);
  }

 private:
  backends::Backend& backend_;
  backends::Buffer* buffer_;
  std::span<const Tensor> contexts_;
  size_t site_ = 0;
  Tensor whole_;
};

// The rows of an open input after its context.
Tensor fresh_rows(const Tensor& whole, int64_t context, int64_t rows) { return whole.slice(context, rows); }

}  // namespace

void CodecEncoder::run_seanet(std::span<const float> samples, const Tensor& out) {
  backends::Backend& be = *backend_;
  const CodecEncoderConfig& c = config_;
  const CodecEncoderWeights& w = weights_;
  CodecEncoderScratch& s = *scratch_;
  for (const Tensor& context : s.contexts)
    if (context) be.fill_zero(context);
  auto act = [](backends::Buffer* buffer, int64_t rows, int64_t channels) {
    return Tensor::make(buffer, 0, DType::F32, {rows, channels});
  };

  int64_t out_row = 0;
  for (size_t begin = 0; begin < samples.size(); begin += static_cast<size_t>(chunk_samples_)) {
    const std::span<const float> chunk = samples.subspan(begin, std::min(samples.size() - begin, static_cast<size_t>(chunk_samples_)));
    ConvInputs inputs(be, s.in.get(), s.contexts);
    int64_t rows = static_cast<int64_t>(chunk.size());

    // The first conv, 1 -> num_filters channels.
    Tensor in = inputs.open(rows, 1);
    be.upload(fresh_rows(in, w.first.context(), rows), std::as_bytes(chunk));
    Tensor x = act(s.x.get(), rows, c.num_filters);
    be.conv1d(in, w.first.w, w.first.bias, 1, x);
    inputs.close();

    for (size_t i = 0; i < w.stages.size(); ++i) {
      const EncoderStage& stage = w.stages[i];
      const int64_t ch = c.stage_channels(i);
      // Residual unit: x += conv2(elu(conv1(elu(x)))).
      in = inputs.open(rows, ch);
      be.activate(x, Act::elu, fresh_rows(in, stage.unit_conv1.context(), rows));
      const Tensor h = act(s.t1.get(), rows, ch / c.compress);
      be.conv1d(in, stage.unit_conv1.w, stage.unit_conv1.bias, 1, h);
      inputs.close();
      be.activate(h, Act::elu, h);
      const Tensor h2 = act(s.t2.get(), rows, ch);
      be.conv1d(h, stage.unit_conv2.w, stage.unit_conv2.bias, 1, h2);
      be.add(x, h2, x);
      // ELU, then the strided conv to 2 * ch channels over whole strides.
      const int64_t stride = stage.down.stride, next_rows = (rows + stride - 1) / stride;
      const int64_t context = stage.down.context();
      in = inputs.open(next_rows * stride, ch);
      be.activate(x, Act::elu, fresh_rows(in, context, rows));
      if (next_rows * stride > rows) be.fill_zero(fresh_rows(in, context + rows, next_rows * stride - rows));
      x = act(s.x.get(), next_rows, 2 * ch);
      be.conv1d(in.reshape({in.dim(0) / stride, stride * ch}), stage.down.w, stage.down.bias, 1, x);
      inputs.close();
      rows = next_rows;
    }

    // ELU, then the last conv straight into the output rows.
    const int64_t ch = c.stage_channels(w.stages.size());
    in = inputs.open(rows, ch);
    be.activate(x, Act::elu, fresh_rows(in, w.last.context(), rows));
    be.conv1d(in, w.last.w, w.last.bias, 1, out.slice(out_row, rows));
    inputs.close();
    out_row += rows;
  }
}

}  // namespace sluice::engine::tts
