// CodecDecoder::decode_group: the forward pass of a group of streams' pieces, at most
// max_chunk_frames frames in all (codec_decoder.cpp explains the conv contexts and
// the KV ring).
#include <span>
#include <string_view>
#include <vector>

#include "backends/host_bytes.h"
#include "engine/models/transformer_block.h"
#include "engine/tts/codec/codec_decoder.h"
#include "engine/tts/codec/codec_scratch.h"

namespace sluice::engine::tts {

using backends::DType;
using backends::Tensor;

namespace {

// A [rows, channels] F32 activation at the start of a scratch buffer.
Tensor act(backends::Buffer* buffer, int64_t rows, int64_t channels) {
  return Tensor::make(buffer, 0, DType::F32, {rows, channels});
}

// Walks the stream's conv sites in pipeline order: open() puts a site's saved
// context in front of the rows at `row_offset` of a scratch buffer and returns where
// the chunk's rows go; close() saves the last context rows of the input the conv
// just read (a site may close after the next one opens: an upsampler's conv writes
// the next input).
class ConvInputs {
 public:
  ConvInputs(backends::Backend& backend, std::span<const Tensor> contexts) : backend_(&backend), contexts_(contexts) {}

  struct Input {
    Tensor whole;  // [context + rows, channels]: what the conv reads
    Tensor fresh;  // [rows, channels]: where the producer writes
    size_t site = 0;
  };

  Input open(backends::Buffer* buffer, int64_t rows, int64_t channels, int64_t row_offset = 0) {
    const Tensor& context = contexts_[opened_];
    const int64_t c = context ? context.dim(0) : 0;
    Input in;
    in.site = opened_++;
    in.whole = Tensor::make(buffer, static_cast<size_t>(row_offset * channels) * sizeof(float), DType::F32,
                            {c + rows, channels});
    in.fresh = in.whole.slice(c, rows);
    if (c > 0) backend_->copy(context, in.whole.slice(0, c));
    return in;
  }

  void close(const Input& in) {
    const Tensor& context = contexts_[in.site];
    if (!context) return;
    const int64_t c = context.dim(0);
    backend_->copy(in.whole.slice(in.whole.dim(0) - c, c), context);
  }

 private:
  backends::Backend* backend_;
  std::span<const Tensor> contexts_;
  size_t opened_ = 0;
};

// One conv site of every piece of a group, stacked: piece i's [context | rows_i]
// right after piece i-1's in one buffer. A conv over `whole` computes each piece's
// outputs from its own context and rows alone (rows never mix in a conv); the
// outputs whose window straddles two pieces are junk, and take() leaves them out.
// Activations between sites are compact: [sum of rows_i, channels], piece by piece.
class StackedInput {
 public:
  StackedInput(backends::Backend& backend, std::span<ConvInputs> inputs, backends::Buffer* buffer,
               std::span<const int64_t> rows, int64_t channels)
      : backend_(backend), inputs_(inputs) {
    int64_t offset = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      parts_.push_back(inputs[i].open(buffer, rows[i], channels, offset));
      offset += parts_.back().whole.dim(0);
    }
    context_ = parts_.front().whole.dim(0) - parts_.front().fresh.dim(0);
    whole = Tensor::make(buffer, 0, DType::F32, {offset, channels});
  }

  Tensor whole;  // what the conv reads

  // Rows of a conv over `whole` that makes `scale` output rows per input row.
  int64_t out_rows(int64_t scale) const { return (whole.dim(0) - context_) * scale; }

  // Each piece's rows of `compact` into its place after its context.
  void put(const Tensor& compact) {
    int64_t r = 0;
    for (const ConvInputs::Input& part : parts_) {
      backend_.copy(compact.slice(r, part.fresh.dim(0)), part.fresh);
      r += part.fresh.dim(0);
    }
  }

  // Each piece's outputs of `out` (the conv over `whole`) into `compact`: piece i's
  // first output row is the one whose window starts at its context, offset_i * scale.
  void take(const Tensor& out, int64_t scale, const Tensor& compact) {
    int64_t r = 0, offset = 0;
    for (const ConvInputs::Input& part : parts_) {
      const int64_t n = part.fresh.dim(0) * scale;
      backend_.copy(out.slice(offset * scale, n), compact.slice(r, n));
      r += n;
      offset += part.whole.dim(0);
    }
  }

  void close() {
    for (size_t i = 0; i < parts_.size(); ++i) inputs_[i].close(parts_[i]);
  }

 private:
  backends::Backend& backend_;
  std::span<ConvInputs> inputs_;
  std::vector<ConvInputs::Input> parts_;
  int64_t context_ = 0;
};

// The first block's residual units (x: its transposed conv's output, updated in
// place), the later blocks, the last SnakeBeta and conv, appended to pcm_out.
void decode_blocks(backends::Backend& be, const CodecConfig& c, const CodecWeights& w, CodecScratch& s,
                   const CodecDecoder::StageHook& stage_hook, ConvInputs& inputs, Tensor x,
                   std::vector<float>& pcm_out) {
  int64_t rows = x.dim(0);
  ConvInputs::Input in;
  for (size_t b = 0; b < w.blocks.size(); ++b) {
    const DecoderBlockWeights& block = w.blocks[b];
    const int64_t cin = c.block_channels(b), cout = c.block_channels(b + 1);
    if (b > 0) {
      in = inputs.open(s.in_a.get(), rows, cin);
      be.snake(x, block.snake.alpha, block.snake.inv_beta, in.fresh);
      rows *= block.up.stride;
      x = act(s.x.get(), rows, cout);
      be.conv_transpose1d(in.whole, block.up.w, block.up.bias, block.up.stride, x);
      inputs.close(in);
    }
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
    if (b == 0 && stage_hook) stage_hook("decoder_1", x);
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
}

}  // namespace

// Stages whose weights a piece of a few frames reads for few rows (the RVQ, the
// pre_transformer, the upsampler, the first conv, the first block's transposed conv)
// run once over every piece's rows; the vocoder's residual units and later blocks,
// whose convolutions do many multiply-adds per weight already, piece by piece.
void CodecDecoder::decode_group(std::span<const CodecPiece> pieces) {
  backends::Backend& be = *backend_;
  const CodecConfig& c = config_;
  const CodecWeights& w = weights_;
  CodecScratch& s = *scratch_;
  const int64_t q = c.num_quantizers;
  const size_t v = pieces.size();
  auto stage = [&](std::string_view name, const Tensor& t) {
    if (stage_hook_) stage_hook_(name, t);
  };

  // --- host metadata: codes codebook-major with each codebook's table offset,
  // positions, KV slots in each stream's ring, the block tables.
  std::vector<int64_t> rows(v);  // per piece, at the current stage's rate
  int64_t n = 0;
  for (size_t i = 0; i < v; ++i) {
    rows[i] = static_cast<int64_t>(pieces[i].codes.size()) / q;
    n += rows[i];
  }
  std::vector<int32_t> ids(static_cast<size_t>(q * n)), positions, slots;
  std::vector<backends::SequenceSlice> sequences(v);
  std::vector<KvCache*> caches(v);
  std::vector<ConvInputs> inputs;
  int64_t row0 = 0;
  for (size_t i = 0; i < v; ++i) {
    CodecStream& stream = *pieces[i].stream;
    const std::span<const int32_t> codes = pieces[i].codes;
    for (int64_t t = 0; t < rows[i]; ++t)
      for (int64_t j = 0; j < q; ++j)
        ids[static_cast<size_t>(j * n + row0 + t)] =
            codes[static_cast<size_t>(t * q + j)] + static_cast<int32_t>(j * c.codebook_size);
    const int64_t pos0 = stream.position_;
    for (int64_t p = pos0; p < pos0 + rows[i]; ++p) {
      positions.push_back(static_cast<int32_t>(p));
      slots.push_back(
          static_cast<int32_t>((p / kCodecKvBlockSize) % ring_blocks_ * kCodecKvBlockSize + p % kCodecKvBlockSize));
    }
    while (static_cast<int64_t>(stream.block_table_.size()) * kCodecKvBlockSize < pos0 + rows[i])
      stream.block_table_.push_back(static_cast<int32_t>(stream.block_table_.size() % static_cast<size_t>(ring_blocks_)));
    sequences[i].query_begin = static_cast<int32_t>(row0);
    sequences[i].num_queries = static_cast<int32_t>(rows[i]);
    sequences[i].num_cached = static_cast<int32_t>(pos0);
    sequences[i].block_table = stream.block_table_;
    caches[i] = stream.kv_.get();
    inputs.emplace_back(be, stream.conv_context_);
    row0 += rows[i];
  }
  auto total = [&] {
    int64_t sum = 0;
    for (int64_t r : rows) sum += r;
    return sum;
  };

  // --- RVQ: the sum of each codebook's (projected) row.
  const Tensor id_tensor = Tensor::make(s.ids.get(), 0, DType::I32, {q * n});
  be.upload(id_tensor, backends::host_bytes(ids));
  const Tensor rvq = act(s.t1.get(), n, c.codebook_dim);
  const Tensor row = act(s.t2.get(), n, c.codebook_dim);
  be.embed(w.codebooks, id_tensor.slice(0, n), rvq);
  for (int64_t j = 1; j < q; ++j) {
    be.embed(w.codebooks, id_tensor.slice(j * n, n), row);
    be.add(rvq, row, rvq);
  }
  stage("rvq", rvq);

  // --- pre_conv, then the pre_transformer over each stream's KV ring.
  StackedInput in(be, inputs, s.in_a.get(), rows, c.codebook_dim);
  in.put(rvq);
  Tensor out = act(s.t2.get(), in.out_rows(1), c.latent_dim);
  be.conv1d(in.whole, w.pre_conv.w, w.pre_conv.bias, w.pre_conv.dilation, out);
  in.close();
  const Tensor latent = act(s.x.get(), n, c.latent_dim);
  in.take(out, 1, latent);
  stage("pre_conv", latent);
  const Workspace::Views views = s.workspace.views(n, 0);
  be.upload(views.positions, backends::host_bytes(positions));
  be.upload(views.kv_slots, backends::host_bytes(slots));
  be.matmul(latent, w.input_proj_w, views.hidden);
  be.add_bias(views.hidden, w.input_proj_b, views.hidden);
  be.begin_step(sequences, n);
  const StepContext step{be, hparams_, s.arch, views, sequences};
  transformer_layers(step, w.layers, caches);
  be.rms_norm(views.hidden, w.output_norm, c.rms_norm_eps, views.normed);

  // --- upsampler: transposed conv, then ConvNeXt (its input is also its residual).
  Tensor x = act(s.x.get(), n, c.latent_dim);
  be.matmul(views.normed, w.output_proj_w, x);
  be.add_bias(x, w.output_proj_b, x);
  stage("pre_transformer", x);
  for (const UpsampleWeights& u : w.upsample) {
    StackedInput up_in(be, inputs, s.in_a.get(), rows, c.latent_dim);
    up_in.put(x);
    out = act(s.t2.get(), up_in.out_rows(u.up.stride), c.latent_dim);
    be.conv_transpose1d(up_in.whole, u.up.w, u.up.bias, u.up.stride, out);
    up_in.close();
    for (int64_t& r : rows) r *= u.up.stride;
    x = act(s.x.get(), total(), c.latent_dim);
    up_in.take(out, u.up.stride, x);
    StackedInput dw_in(be, inputs, s.in_b.get(), rows, c.latent_dim);
    dw_in.put(x);
    out = act(s.t2.get(), dw_in.out_rows(1), c.latent_dim);
    be.depthwise_conv1d(dw_in.whole, u.dw_w, u.dw_b, out);
    dw_in.close();
    const Tensor h = act(s.t1.get(), total(), c.latent_dim);
    dw_in.take(out, 1, h);
    const Tensor wide = act(s.t2.get(), total(), 4 * c.latent_dim);
    be.layer_norm(h, u.norm_w, u.norm_b, 1e-6f, h);
    be.matmul(h, u.pw1_w, wide);
    be.add_bias(wide, u.pw1_b, wide);
    be.activate(wide, backends::Backend::Activation::gelu_erf, wide);
    be.matmul(wide, u.pw2_w, h);
    be.add_bias(h, u.pw2_b, h);
    be.add(x, h, x);
  }
  stage("upsample", x);

  // --- vocoder: the first conv, then the first block's SnakeBeta and transposed conv.
  StackedInput first_in(be, inputs, s.in_a.get(), rows, c.latent_dim);
  first_in.put(x);
  out = act(s.t2.get(), first_in.out_rows(1), c.decoder_dim);
  be.conv1d(first_in.whole, w.first_conv.w, w.first_conv.bias, w.first_conv.dilation, out);
  first_in.close();
  const Tensor x0 = act(s.t1.get(), total(), c.decoder_dim);
  first_in.take(out, 1, x0);
  stage("decoder_0", x0);
  const DecoderBlockWeights& block0 = w.blocks.front();
  StackedInput block_in(be, inputs, s.in_b.get(), rows, c.block_channels(0));
  const Tensor snaked = act(s.x.get(), total(), c.block_channels(0));
  be.snake(x0, block0.snake.alpha, block0.snake.inv_beta, snaked);
  block_in.put(snaked);
  out = act(s.t2.get(), block_in.out_rows(block0.up.stride), c.block_channels(1));
  be.conv_transpose1d(block_in.whole, block0.up.w, block0.up.bias, block0.up.stride, out);
  block_in.close();
  for (int64_t& r : rows) r *= block0.up.stride;
  const Tensor blocks_in = act(s.merged.get(), total(), c.block_channels(1));
  block_in.take(out, block0.up.stride, blocks_in);

  // --- the rest, piece by piece.
  row0 = 0;
  for (size_t i = 0; i < v; ++i) {
    decode_blocks(be, c, w, s, stage_hook_, inputs[i], blocks_in.slice(row0, rows[i]), *pieces[i].pcm_out);
    pieces[i].stream->position_ += static_cast<int64_t>(pieces[i].codes.size()) / q;
    row0 += rows[i];
  }
}

}  // namespace sluice::engine::tts
