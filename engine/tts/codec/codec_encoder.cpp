// The codec encoder's load, its SEANet scratch, the encode pipeline and the
// downsample conv (SEANet: codec_encoder_seanet.cpp; transformer:
// codec_encoder_transformer.cpp; quantizer: codec_encoder_quantize.cpp).
#include "engine/tts/codec/codec_encoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/tts/codec/codec_encoder_scratch.h"

namespace sluice::engine::tts {

using backends::DType;
using backends::Tensor;

namespace {

// One conv input that carries context from chunk to chunk: its context rows and channels.
struct ConvSite {
  int64_t context = 0;
  int64_t channels = 0;
};

// Every SEANet conv input with context, in the order run_seanet visits them.
std::vector<ConvSite> seanet_sites(const CodecEncoderConfig& c, const CodecEncoderWeights& w) {
  std::vector<ConvSite> sites;
  sites.push_back({w.first.context(), 1});
  for (size_t i = 0; i < w.stages.size(); ++i) {
    sites.push_back({w.stages[i].unit_conv1.context(), c.stage_channels(i)});
    sites.push_back({w.stages[i].down.context(), c.stage_channels(i)});
  }
  sites.push_back({w.last.context(), c.stage_channels(w.stages.size())});
  return sites;
}

}  // namespace

CodecEncoder::CodecEncoder(const CodecEncoderConfig& config, backends::Backend& backend, CodecEncoderWeights weights,
                           int64_t chunk_samples)
    : config_(config), backend_(&backend), weights_(std::move(weights)) {
  if (!backend.supports_attention(config.num_heads, config.num_kv_heads, config.head_dim))
    throw std::invalid_argument("the " + backend.name() + " backend cannot run the codec encoder's attention heads");
  const int64_t stride = config.seanet_stride();
  chunk_samples_ = (chunk_samples + stride - 1) / stride * stride;
  const CodecEncoderConfig& c = config_;
  const CodecEncoderWeights& w = weights_;
  // The largest conv input and activation of a chunk, walking the pipeline as run_seanet does.
  int64_t in_floats = 0, x_floats = 0, t1_floats = 0, t2_floats = 0;
  int64_t rows = chunk_samples_;
  in_floats = std::max(in_floats, w.first.context() + rows);
  for (size_t i = 0; i < w.stages.size(); ++i) {
    const int64_t ch = c.stage_channels(i), s = w.stages[i].down.stride;
    x_floats = std::max(x_floats, rows * ch);
    in_floats = std::max(in_floats, (w.stages[i].unit_conv1.context() + rows) * ch);
    t1_floats = std::max(t1_floats, rows * (ch / c.compress));
    t2_floats = std::max(t2_floats, rows * ch);
    rows = (rows + s - 1) / s;
    in_floats = std::max(in_floats, (w.stages[i].down.context() + rows * s) * ch);
  }
  const int64_t last_ch = c.stage_channels(w.stages.size());
  x_floats = std::max(x_floats, rows * last_ch);
  in_floats = std::max(in_floats, (w.last.context() + rows) * last_ch);

  scratch_ = std::make_unique<CodecEncoderScratch>();
  CodecEncoderScratch& s = *scratch_;
  s.in = backend.allocate(static_cast<size_t>(in_floats) * sizeof(float));
  s.x = backend.allocate(static_cast<size_t>(x_floats) * sizeof(float));
  s.t1 = backend.allocate(static_cast<size_t>(t1_floats) * sizeof(float));
  s.t2 = backend.allocate(static_cast<size_t>(t2_floats) * sizeof(float));
  const std::vector<ConvSite> sites = seanet_sites(c, w);
  int64_t floats = 0;
  for (const ConvSite& site : sites) floats += site.context * site.channels;
  s.context_buffer = backend.allocate(static_cast<size_t>(std::max<int64_t>(floats, 1)) * sizeof(float));
  size_t offset = 0;
  for (const ConvSite& site : sites) {
    s.contexts.push_back(site.context == 0 ? Tensor()
                                           : Tensor::make(s.context_buffer.get(), offset, DType::F32,
                                                          {site.context, site.channels}));
    offset += static_cast<size_t>(site.context * site.channels) * sizeof(float);
  }
}

CodecEncoder::CodecEncoder(CodecEncoder&&) noexcept = default;
CodecEncoder::~CodecEncoder() = default;

CodecEncoder CodecEncoder::load(const loader::TensorSet& set, const CodecEncoderConfig& config,
                                backends::Backend& backend, int64_t chunk_samples) {
  if (chunk_samples < 1) throw std::invalid_argument("codec encoder: chunk_samples must be positive");
  return CodecEncoder(config, backend, load_codec_encoder_weights(set, config, backend), chunk_samples);
}

std::vector<int32_t> CodecEncoder::encode(std::span<const float> samples) {
  if (samples.empty()) throw std::invalid_argument("codec encoder: no samples to encode");
  for (size_t i = 0; i < samples.size(); ++i)
    if (!std::isfinite(samples[i]))
      throw std::invalid_argument("codec encoder: sample " + std::to_string(i) + " is not finite");
  const CodecEncoderConfig& c = config_;
  const auto n = static_cast<int64_t>(samples.size());
  const int64_t seanet_frames = (n + c.seanet_stride() - 1) / c.seanet_stride();
  const int64_t frames = (seanet_frames + c.downsample_stride - 1) / c.downsample_stride;

  CallBuffers call(*backend_);
  const Tensor hidden = call.f32({seanet_frames, c.hidden_size});
  run_seanet(samples, hidden);
  stage("seanet", hidden);
  run_transformer(hidden);
  stage("transformer", hidden);
  const Tensor down = call.f32({frames, c.hidden_size});
  run_downsample(hidden, down);
  stage("downsample", down);
  return quantize(down);
}

// Mimi pads the downsample conv's input with copies of its first row (kernel -
// stride of them) and, to whole strides, of its last row.
void CodecEncoder::run_downsample(const Tensor& x, const Tensor& out) {
  backends::Backend& be = *backend_;
  const EncoderConv& conv = weights_.downsample;
  const int64_t rows = x.dim(0), h = x.cols(), s = conv.stride, frames = out.dim(0);
  const int64_t context = conv.context(), right = frames * s - rows;
  CallBuffers call(be);
  const Tensor padded = call.f32({context + frames * s, h});
  for (int64_t r = 0; r < context; ++r) be.copy(x.slice(0, 1), padded.slice(r, 1));
  be.copy(x, padded.slice(context, rows));
  for (int64_t r = 0; r < right; ++r) be.copy(x.slice(rows - 1, 1), padded.slice(context + rows + r, 1));
  // Viewed as [rows / s, s*h], the strided conv is a (kernel / s)-tap conv.
  const Tensor view = padded.reshape({(context + frames * s) / s, s * h});
  be.conv1d(view, conv.w, conv.bias, 1, out);
}

}  // namespace sluice::engine::tts
