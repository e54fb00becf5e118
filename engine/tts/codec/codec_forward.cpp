// CodecDecoder::decode_chunk: the forward pass of n <= max_chunk_frames frames on
// one stream (codec_decoder.cpp explains the conv contexts and the KV ring).
#include <algorithm>
#include <cstring>

#include "engine/models/transformer_block.h"
#include "engine/tts/codec/codec_decoder.h"
#include "engine/tts/codec/codec_scratch.h"

namespace sluice::engine::tts {

using backends::DType;
using backends::Tensor;

namespace {

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

// Walks the stream's conv sites in pipeline order: open() puts a site's saved
// context in front of a scratch buffer and returns where the chunk's rows go;
// close() saves the last context rows of the input the conv just read (a site may
// close after the next one opens: an upsampler's conv writes the next input).
class ConvInputs {
 public:
  ConvInputs(backends::Backend& backend, std::span<const Tensor> contexts) : backend_(backend), contexts_(contexts) {}

  struct Input {
    Tensor whole;  // [context + rows, channels]: what the conv reads
    Tensor fresh;  // [rows, channels]: where the producer writes
    size_t site = 0;
  };

  Input open(backends::Buffer* buffer, int64_t rows, int64_t channels) {
    const Tensor& context = contexts_[opened_];
    const int64_t c = context ? context.dim(0) : 0;
    Input in;
    in.site = opened_++;
    in.whole = Tensor::make(buffer, 0, DType::F32, {c + rows, channels});
    in.fresh = in.whole.slice(c, rows);
    if (c > 0) backend_.copy(context, in.whole.slice(0, c));
    return in;
  }

  void close(const Input& in) {
    const Tensor& context = contexts_[in.site];
    if (!context) return;
    const int64_t c = context.dim(0);
    backend_.copy(in.whole.slice(in.whole.dim(0) - c, c), context);
  }

 private:
  backends::Backend& backend_;
  std::span<const Tensor> contexts_;
  size_t opened_ = 0;
};

}  // namespace

void CodecDecoder::decode_chunk(CodecStream& stream, std::span<const int32_t> codes, std::vector<float>& pcm_out) {
  backends::Backend& be = *backend_;
  const CodecConfig& c = config_;
  const CodecWeights& w = weights_;
  CodecScratch& s = *scratch_;
  const int64_t q = c.num_quantizers;
  const int64_t n = static_cast<int64_t>(codes.size()) / q;
  const int64_t pos0 = stream.position_;
  ConvInputs inputs(be, stream.conv_context_);
  auto stage = [&](std::string_view name, const Tensor& t) {
    if (stage_hook_) stage_hook_(name, t);
  };
  auto act = [](backends::Buffer* buffer, int64_t rows, int64_t channels) {
    return Tensor::make(buffer, 0, DType::F32, {rows, channels});
  };

  // --- host metadata: codes codebook-major with each codebook's table offset,
  // positions, KV slots in the ring, the block table.
  std::vector<int32_t> ids(static_cast<size_t>(q * n));
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < q; ++j)
      ids[static_cast<size_t>(j * n + t)] = codes[static_cast<size_t>(t * q + j)] + static_cast<int32_t>(j * c.codebook_size);
  std::vector<int32_t> positions(static_cast<size_t>(n)), slots(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const int64_t p = pos0 + t;
    positions[static_cast<size_t>(t)] = static_cast<int32_t>(p);
    slots[static_cast<size_t>(t)] =
        static_cast<int32_t>((p / kCodecKvBlockSize) % ring_blocks_ * kCodecKvBlockSize + p % kCodecKvBlockSize);
  }
  while (static_cast<int64_t>(stream.block_table_.size()) * kCodecKvBlockSize < pos0 + n)
    stream.block_table_.push_back(static_cast<int32_t>(stream.block_table_.size() % static_cast<size_t>(ring_blocks_)));

  // --- RVQ: the sum of each codebook's (projected) row.
  const Tensor id_tensor = Tensor::make(s.ids.get(), 0, DType::I32, {q * n});
  be.upload(id_tensor, bytes_of(ids));
  ConvInputs::Input in = inputs.open(s.in_a.get(), n, c.codebook_dim);
  const Tensor row = act(s.t1.get(), n, c.codebook_dim);
  be.embed(w.codebooks, id_tensor.slice(0, n), in.fresh);
  for (int64_t j = 1; j < q; ++j) {
    be.embed(w.codebooks, id_tensor.slice(j * n, n), row);
    be.add(in.fresh, row, in.fresh);
  }
  stage("rvq", in.fresh);

  // --- pre_conv, then the pre_transformer over the stream's KV ring.
  const Tensor latent = act(s.t2.get(), n, c.latent_dim);
  be.conv1d(in.whole, w.pre_conv.w, w.pre_conv.bias, w.pre_conv.dilation, latent);
  inputs.close(in);
  stage("pre_conv", latent);
  const Workspace::Views views = s.workspace.views(n, 0);
  be.upload(views.positions, bytes_of(positions));
  be.upload(views.kv_slots, bytes_of(slots));
  be.matmul(latent, w.input_proj_w, views.hidden);
  be.add_bias(views.hidden, w.input_proj_b, views.hidden);
  backends::SequenceSlice sequence;
  sequence.num_queries = static_cast<int32_t>(n);
  sequence.num_cached = static_cast<int32_t>(pos0);
  sequence.block_table = stream.block_table_;
  be.begin_step({&sequence, 1}, n);
  const StepContext step{be, hparams_, s.arch, views, {&sequence, 1}};
  transformer_layers(step, w.layers, *stream.kv_);
  be.rms_norm(views.hidden, w.output_norm, c.rms_norm_eps, views.normed);

  // --- upsampler: transposed conv, then ConvNeXt (its input is also its residual).
  int64_t rows = n;
  in = inputs.open(s.in_b.get(), rows, c.latent_dim);
  be.matmul(views.normed, w.output_proj_w, in.fresh);
  be.add_bias(in.fresh, w.output_proj_b, in.fresh);
  stage("pre_transformer", in.fresh);
  for (size_t i = 0; i < w.upsample.size(); ++i) {
    const UpsampleWeights& u = w.upsample[i];
    ConvInputs::Input dw = inputs.open(in.whole.buffer == s.in_a.get() ? s.in_b.get() : s.in_a.get(),
                                       rows * u.up.stride, c.latent_dim);
    be.conv_transpose1d(in.whole, u.up.w, u.up.bias, u.up.stride, dw.fresh);
    inputs.close(in);
    rows *= u.up.stride;
    const Tensor h = act(s.t1.get(), rows, c.latent_dim);
    const Tensor wide = act(s.t2.get(), rows, 4 * c.latent_dim);
    be.depthwise_conv1d(dw.whole, u.dw_w, u.dw_b, h);
    be.layer_norm(h, u.norm_w, u.norm_b, 1e-6f, h);
    be.matmul(h, u.pw1_w, wide);
    be.add_bias(wide, u.pw1_b, wide);
    be.activate(wide, backends::Backend::Activation::gelu_erf, wide);
    be.matmul(wide, u.pw2_w, h);
    be.add_bias(h, u.pw2_b, h);
    // The sum goes straight into the next conv's input (the other buffer).
    ConvInputs::Input next = inputs.open(dw.whole.buffer == s.in_a.get() ? s.in_b.get() : s.in_a.get(), rows,
                                         c.latent_dim);
    be.add(dw.fresh, h, next.fresh);
    inputs.close(dw);
    in = next;
  }
  stage("upsample", in.fresh);

  // --- vocoder: first conv, blocks of (SnakeBeta, transposed conv, 3 residual units).
  const Tensor x0 = act(s.x.get(), rows, c.decoder_dim);
  be.conv1d(in.whole, w.first_conv.w, w.first_conv.bias, w.first_conv.dilation, x0);
  inputs.close(in);
  stage("decoder_0", x0);
  Tensor x = x0;
  for (size_t b = 0; b < w.blocks.size(); ++b) {
    const DecoderBlockWeights& block = w.blocks[b];
    const int64_t cin = c.block_channels(b), cout = c.block_channels(b + 1);
    in = inputs.open(s.in_a.get(), rows, cin);
    be.snake(x, block.snake.alpha, block.snake.inv_beta, in.fresh);
    rows *= block.up.stride;
    x = act(s.x.get(), rows, cout);
    be.conv_transpose1d(in.whole, block.up.w, block.up.bias, block.up.stride, x);
    inputs.close(in);
    const Tensor h = act(s.t1.get(), rows, cout);
    const Tensor h2 = act(s.t2.get(), rows, cout);
    for (const ResidualUnitWeights& unit : block.units) {
      in = inputs.open(s.in_b.get(), rows, cout);
      be.snake(x, unit.act1.alpha, unit.act1.inv_beta, in.fresh);
      be.conv1d(in.whole, unit.conv1.w, unit.conv1.bias, unit.conv1.dilation, h);
      inputs.close(in);
      be.snake(h, unit.act2.alpha, unit.act2.inv_beta, h);
      be.conv1d(h, unit.conv2.w, unit.conv2.bias, 1, h2);
      be.add(x, h2, x);
    }
    if (b == 0) stage("decoder_1", x);
  }
  const int64_t channels = c.block_channels(w.blocks.size());
  in = inputs.open(s.in_a.get(), rows, channels);
  be.snake(x, w.final_snake.alpha, w.final_snake.inv_beta, in.fresh);
  const Tensor pcm = act(s.t1.get(), rows, 1);
  be.conv1d(in.whole, w.last_conv.w, w.last_conv.bias, 1, pcm);
  inputs.close(in);
  be.clamp(pcm, -1.0f, 1.0f, pcm);

  const size_t old_size = pcm_out.size();
  pcm_out.resize(old_size + static_cast<size_t>(rows));
  be.download(pcm, std::as_writable_bytes(std::span<float>(pcm_out).subspan(old_size)));
  stream.position_ += n;
}

}  // namespace sluice::engine::tts
