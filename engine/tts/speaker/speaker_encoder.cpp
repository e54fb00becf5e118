#include "engine/tts/speaker/speaker_encoder.h"

#include <algorithm>
#include <limits>

#include "backends/check.h"
#include "engine/tts/speaker/column_view.h"

namespace sluice::engine::tts {
namespace {

using backends::Backend;
using backends::DType;
using backends::Tensor;

constexpr float kInf = std::numeric_limits<float>::infinity();
// The attentive pooling's floor under the variance (before its square root).
constexpr float kVarianceFloor = 1e-12f;

// One pass of the network: the ops of each layer over the [T, C] signal.
class Pass {
 public:
  Pass(Backend& backend, DeviceArena& arena, int64_t frames) : be_(backend), arena_(arena), t_(frames) {
    ones_ = arena_.upload(DType::F32, {1, t_}, std::vector<float>(static_cast<size_t>(t_), 1.0f));
    // The official pooling weighs each frame by mask / mask.sum(): 1/T in F32.
    inv_t_ = arena_.upload(DType::F32, {1, t_}, std::vector<float>(static_cast<size_t>(t_), 1.0f / static_cast<float>(t_)));
    zeros_ = arena_.upload(DType::I32, {t_}, std::vector<int32_t>(static_cast<size_t>(t_), 0));
  }

  // out = relu(conv(x)) with "same" reflect padding (no relu for the attention conv).
  void tdnn(const TdnnWeights& w, const Tensor& x, const Tensor& out, bool relu = true) {
    Tensor in = x;
    if (w.context() > 0) {
      const int64_t before = w.context() / 2;  // the rest of the context goes after
      std::vector<int32_t> ids(static_cast<size_t>(t_ + w.context()));
      for (int64_t i = 0; i < t_ + w.context(); ++i) {
        const int64_t j = i - before;
        ids[static_cast<size_t>(i)] = static_cast<int32_t>(j < 0 ? -j : (j >= t_ ? 2 * (t_ - 1) - j : j));
      }
      in = arena_.f32({t_ + w.context(), x.cols()});
      be_.embed(x, arena_.upload(DType::I32, {t_ + w.context()}, ids), in);
    }
    be_.conv1d(in, w.w, w.bias, w.dilation, out);
    if (relu) be_.clamp(out, 0.0f, kInf, out);
  }

  // out [C, 1] = sum over time of x [T, C] weighted by `row` [1, T].
  void time_sum(const Tensor& x, const Tensor& row, const Tensor& out) {
    const Tensor xt = arena_.f32({x.cols(), t_});
    be_.transpose(x, xt);
    be_.matmul(xt, row, out);
  }

  // Squeeze-excitation-Res2Net block: out = se(tdnn2(res2net(tdnn1(x)))) + x.
  void block(const SeRes2NetWeights& w, const Tensor& x, const Tensor& out) {
    const int64_t ch = out.cols(), scale = static_cast<int64_t>(w.res2net.size()) + 1, group = ch / scale;
    const Tensor h = arena_.f32({t_, ch});
    tdnn(w.tdnn1, x, h);
    // Res2Net: group 0 passes; group 1 is convolved; group i >= 2 is convolved
    // after adding group i - 1's output.
    const Tensor r = arena_.f32({t_, ch});
    be_.copy(columns(h, 0, group), columns(r, 0, group));
    const Tensor sum = arena_.f32({t_, group});
    for (int64_t i = 1; i < scale; ++i) {
      Tensor in = columns(h, i * group, group);
      if (i >= 2) {
        be_.add(in, columns(r, (i - 1) * group, group), sum);
        in = sum;
      }
      tdnn(w.res2net[static_cast<size_t>(i - 1)], in, columns(r, i * group, group));
    }
    const Tensor y = arena_.f32({t_, ch});
    tdnn(w.tdnn2, r, y);

    // Squeeze-excitation: gate = sigmoid(excite(relu(squeeze(mean_t y)))); the
    // official mean is the sum divided by T.
    const Tensor mean = arena_.f32({ch, 1});
    time_sum(y, ones_, mean);
    be_.scale(mean, 1.0f / static_cast<float>(t_), mean);
    const Tensor squeezed = arena_.f32({1, w.se_squeeze.cout});
    be_.conv1d(mean.reshape({1, ch}), w.se_squeeze.w, w.se_squeeze.bias, 1, squeezed);
    be_.clamp(squeezed, 0.0f, kInf, squeezed);
    const Tensor gate = arena_.f32({1, ch});
    be_.conv1d(squeezed, w.se_excite.w, w.se_excite.bias, 1, gate);
    be_.activate(gate, Backend::Activation::sigmoid, gate);
    be_.depthwise_conv1d(y, gate.reshape({ch, 1}), Tensor{}, out);
    be_.add(out, x, out);
  }

  // Weighted mean and std over time of x [T, C]: mean = sum_t w x, std =
  // sqrt(max(sum_t w (x - mean)^2, 1e-12)), each [C] written to the [C, 1] views.
  // `weights` is [C, T] (the attention, per channel) or null with `row` the
  // uniform 1/T weights; products are taken before the sums, as the official code.
  void statistics(const Tensor& x, const Tensor& weights, const Tensor& mean, const Tensor& std) {
    const int64_t c = x.cols();
    const Tensor xt = arena_.f32({c, t_});
    be_.transpose(x, xt);
    if (weights) {
      be_.mul(weights, xt, xt);
      be_.matmul(xt, ones_, mean);
    } else {
      be_.matmul(xt, inv_t_, mean);
    }
    const Tensor negated = arena_.f32({c});
    be_.scale(mean.reshape({c}), -1.0f, negated);
    const Tensor d = arena_.f32({t_, c});
    be_.add_bias(x, negated, d);
    be_.mul(d, d, d);
    be_.transpose(d, xt);
    if (weights) {
      be_.mul(weights, xt, xt);
      be_.matmul(xt, ones_, std);
    } else {
      be_.matmul(xt, inv_t_, std);
    }
    be_.clamp(std, kVarianceFloor, kInf, std);
    be_.activate(std, Backend::Activation::sqrt, std);
  }

  // Attentive statistics pooling of x [T, C] (a view into the first C columns of
  // `context` [T, 3C]) into pooled [1, 2C] = [mean | std].
  void pool(const SpeakerEncoderWeights& w, const Tensor& context, const Tensor& pooled) {
    const int64_t c = context.cols() / 3;
    const Tensor x = columns(context, 0, c);
    // The global statistics, repeated over time beside x.
    const Tensor stats = arena_.f32({1, 2 * c});
    statistics(x, Tensor{}, stats.reshape({2 * c, 1}).slice(0, c), stats.reshape({2 * c, 1}).slice(c, c));
    be_.embed(columns(stats, 0, c), zeros_, columns(context, c, c));
    be_.embed(columns(stats, c, c), zeros_, columns(context, 2 * c, c));

    const Tensor hidden = arena_.f32({t_, w.attention_tdnn.cout});
    tdnn(w.attention_tdnn, context, hidden);
    be_.activate(hidden, Backend::Activation::tanh, hidden);
    const Tensor logits = arena_.f32({t_, c});
    tdnn(w.attention_conv, hidden, logits, /*relu=*/false);
    const Tensor attention = arena_.f32({c, t_});  // softmax over time, per channel
    be_.transpose(logits, attention);
    be_.softmax(attention, attention);
    statistics(x, attention, pooled.reshape({2 * c, 1}).slice(0, c), pooled.reshape({2 * c, 1}).slice(c, c));
  }

 private:
  Backend& be_;
  DeviceArena& arena_;
  int64_t t_;
  Tensor ones_, inv_t_;  // [1, T]
  Tensor zeros_;         // [T] I32: row 0 repeated
};

}  // namespace

SpeakerEncoder::SpeakerEncoder(const loader::TensorSet& tensors, const SpeakerEncoderConfig& config,
                               Backend& backend)
    : backend_(backend),
      config_(config),
      weights_(load_speaker_encoder_weights(tensors, config, backend)),
      frontend_(backend) {}

// PyTorch's reflect padding needs more frames than it pads on either side.
int64_t SpeakerEncoder::min_frames() const {
  int64_t most = 0;
  for (size_t i = 0; i < config_.num_layers(); ++i) {
    const int64_t context = (config_.kernel_sizes[i] - 1) * config_.dilations[i];
    most = std::max(most, context - context / 2);
  }
  return most + 1;
}

std::optional<std::string> SpeakerEncoder::check_length(int64_t num_samples) const {
  if (auto error = frontend_.check_length(num_samples)) return error;
  const int64_t frames = frontend_.num_frames(num_samples);
  if (frames < min_frames())
    return "the audio gives " + std::to_string(frames) + " mel frames; the speaker encoder needs at least " +
           std::to_string(min_frames());
  return std::nullopt;
}

std::vector<float> SpeakerEncoder::mels(std::span<const float> audio) const {
  SLUICE_CHECK(!check_length(static_cast<int64_t>(audio.size())), "SpeakerEncoder::mels: audio too short");
  DeviceArena arena(backend_);
  const Tensor m = frontend_.compute(audio, arena);
  std::vector<float> out(static_cast<size_t>(m.num_elements()));
  backend_.download(m, std::as_writable_bytes(std::span<float>(out)));
  backend_.synchronize();
  return out;
}

std::vector<float> SpeakerEncoder::embed(std::span<const float> audio) const {
  SLUICE_CHECK(!check_length(static_cast<int64_t>(audio.size())), "SpeakerEncoder::embed: audio too short");
  DeviceArena arena(backend_);
  return run_network(frontend_.compute(audio, arena), arena);
}

std::vector<float> SpeakerEncoder::embed_mels(std::span<const float> mels, int64_t frames) const {
  SLUICE_CHECK(frames >= min_frames() && mels.size() == static_cast<size_t>(frames * config_.mel_dim),
               "SpeakerEncoder::embed_mels: not [frames, mel_dim] or too few frames");
  DeviceArena arena(backend_);
  const Tensor m = arena.upload(DType::F32, {frames, config_.mel_dim}, std::vector<float>(mels.begin(), mels.end()));
  return run_network(m, arena);
}

std::vector<float> SpeakerEncoder::run_network(const Tensor& mels, DeviceArena& arena) const {
  const int64_t t = mels.rows();
  Pass pass(backend_, arena, t);
  const SpeakerEncoderWeights& w = weights_;
  const Tensor first = arena.f32({t, config_.channels[0]});
  pass.tdnn(w.first, mels, first);

  // The blocks write their outputs side by side: the aggregation layer's input.
  const int64_t pooled_c = config_.pooled_channels();
  const Tensor blocks = arena.f32({t, pooled_c});
  Tensor x = first;
  int64_t column = 0;
  for (const SeRes2NetWeights& block : w.blocks) {
    const int64_t ch = block.tdnn2.cout;
    const Tensor out = columns(blocks, column, ch);
    pass.block(block, x, out);
    x = out;
    column += ch;
  }
  // The aggregation's output is the first third of the pooling's context [x | mean | std].
  const Tensor context = arena.f32({t, 3 * pooled_c});
  pass.tdnn(w.aggregate, blocks, columns(context, 0, pooled_c));
  const Tensor pooled = arena.f32({1, 2 * pooled_c});
  pass.pool(w, context, pooled);

  const Tensor embedding = arena.f32({1, config_.enc_dim});
  backend_.conv1d(pooled, w.fc.w, w.fc.bias, 1, embedding);
  std::vector<float> out(static_cast<size_t>(config_.enc_dim));
  backend_.download(embedding, std::as_writable_bytes(std::span<float>(out)));
  backend_.synchronize();
  return out;
}

}  // namespace sluice::engine::tts
