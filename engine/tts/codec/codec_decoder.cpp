// The codec decoder's forward pass over one chunk of frames, and its streams.
//
// Activations are [rows, channels] F32, time along rows (backend.h's signal
// layout). A causal conv reads its chunk's input with `context` rows in front: the
// producer writes the chunk's rows into a scratch buffer after the stream's saved
// context, the conv runs, and the last `context` input rows go back to the stream.
// Two such input buffers (in_a, in_b) alternate, because an upsampler's transposed
// conv reads one while writing its ConvNeXt block's input (also its residual) into
// the other.
//
// The KV ring. Frame p of a stream sits at transformer position p, stored in block
// (p / block_size) % ring_blocks of the stream's own KvCache, so the block table is
// i -> i % ring_blocks (one more entry every block_size frames) and p's slot is
// p mod (ring_blocks * block_size): distinct for any ring_blocks * block_size
// consecutive positions. A chunk of n frames from position c needs positions
// [c - window + 1, c + n) live, window - 1 + n of them, so ring_blocks =
// ceil((window - 1 + max_chunk_frames) / block_size) never overwrites a live
// position. Table entries for older positions point at recycled blocks; no
// attention kernel reads them: the CPU kernel
// (backends/cpu/attention_kernel_impl.h) starts each work item at the window start
// of its first query, lowest(first_position) = first_position - window + 1 >= c -
// window + 1, and the CUDA kernel (backends/cuda/k_attention.cu) starts each query
// at max(0, p - window + 1).
#include "engine/tts/codec/codec_decoder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/models/architecture.h"
#include "engine/models/transformer_block.h"
#include "engine/tts/codec/codec_scratch.h"

namespace sluice::engine::tts {

using backends::DType;
using backends::Tensor;

namespace {

// The pre_transformer as the shared block sees it: llama (no q/k norms, SwiGLU),
// NeoX RoPE over the whole head, a sliding window on every layer, no logits.
ModelHparams transformer_hparams(const CodecConfig& c) {
  ModelHparams h;
  h.architecture = "llama";
  h.vocab_size = 1;  // the codec produces no logits; the workspace wants a width
  h.context_length = 1 << 30;
  h.embedding_length = c.hidden_size;
  h.num_layers = c.num_layers;
  h.num_heads = c.num_heads;
  h.num_kv_heads = c.num_kv_heads;
  h.head_dim = c.head_dim;
  h.ffn_length = c.intermediate_size;
  h.norm_eps = c.rms_norm_eps;
  h.rope.num_rotated = static_cast<int>(c.head_dim);
  h.rope.theta = c.rope_theta;
  h.rope.neox = true;
  h.rope_local = h.rope;
  h.sliding_window = c.sliding_window;
  h.sliding_window_pattern = static_cast<int32_t>(c.num_layers + 1);  // every layer slides
  return h;
}

Architecture transformer_architecture() {
  Architecture arch = llama_architecture();
  arch.sliding_window = true;
  return arch;
}

// One stateful conv input: its left context rows and channels.
struct ConvSite {
  int64_t context = 0;
  int64_t channels = 0;
};

// Every conv input of the pipeline in the order the forward pass visits them.
std::vector<ConvSite> conv_sites(const CodecConfig& c, const CodecWeights& w) {
  std::vector<ConvSite> sites;
  sites.push_back({w.pre_conv.context(), c.codebook_dim});
  for (const UpsampleWeights& u : w.upsample) {
    sites.push_back({u.up.context(), c.latent_dim});
    sites.push_back({u.dw_taps - 1, c.latent_dim});
  }
  sites.push_back({w.first_conv.context(), c.latent_dim});
  for (size_t b = 0; b < w.blocks.size(); ++b) {
    sites.push_back({w.blocks[b].up.context(), c.block_channels(b)});
    for (const ResidualUnitWeights& unit : w.blocks[b].units) sites.push_back({unit.conv1.context(), c.block_channels(b + 1)});
  }
  sites.push_back({w.last_conv.context(), c.block_channels(w.blocks.size())});
  return sites;
}

}  // namespace

CodecDecoder::CodecDecoder(const CodecConfig& config, backends::Backend& backend, CodecWeights weights,
                           int64_t max_chunk_frames)
    : config_(config),
      backend_(&backend),
      weights_(std::move(weights)),
      hparams_(transformer_hparams(config)),
      max_chunk_frames_(max_chunk_frames),
      ring_blocks_((config.sliding_window - 1 + max_chunk_frames + kCodecKvBlockSize - 1) / kCodecKvBlockSize) {
  const Architecture arch = transformer_architecture();
  arch.check(hparams_);
  if (!backend.supports_attention(hparams_.num_heads, hparams_.num_kv_heads, hparams_.head_dim))
    throw std::invalid_argument("the " + backend.name() + " backend cannot run the codec's attention heads");
  const CodecConfig& c = config_;
  const int64_t n = max_chunk_frames;
  // The largest conv input and activation of a step of n frames, walking the
  // pipeline as decode_group does: up to the first block's transposed conv its conv
  // inputs are stacked, each of up to kMaxStreamsPerStep pieces with its context
  // (so is that conv's output, junk rows between pieces included).
  const auto pieces = static_cast<int64_t>(kMaxStreamsPerStep);
  int64_t site_floats = 0, act_floats = 0;
  auto site = [&](int64_t context, int64_t rows, int64_t ch, int64_t stacked = 1) {
    site_floats = std::max(site_floats, (stacked * context + rows) * ch);
  };
  auto act = [&](int64_t rows, int64_t ch) { act_floats = std::max(act_floats, rows * ch); };
  // A stacked conv's output: every row of its input past one context, times the stride.
  auto stacked_out = [&](int64_t context, int64_t rows, int64_t stride, int64_t ch) {
    act(((pieces - 1) * context + rows) * stride, ch);
  };
  int64_t rows = n;
  site(weights_.pre_conv.context(), rows, c.codebook_dim, pieces);
  stacked_out(weights_.pre_conv.context(), rows, 1, c.latent_dim);
  act(rows, c.codebook_dim);
  act(rows, c.latent_dim);
  for (const UpsampleWeights& u : weights_.upsample) {
    site(u.up.context(), rows, c.latent_dim, pieces);
    stacked_out(u.up.context(), rows, u.up.stride, c.latent_dim);
    rows *= u.up.stride;
    site(u.dw_taps - 1, rows, c.latent_dim, pieces);
    stacked_out(u.dw_taps - 1, rows, 1, c.latent_dim);
    act(rows, 4 * c.latent_dim);
  }
  site(weights_.first_conv.context(), rows, c.latent_dim, pieces);
  stacked_out(weights_.first_conv.context(), rows, 1, c.decoder_dim);
  act(rows, c.decoder_dim);
  int64_t merged_floats = 0;
  for (size_t b = 0; b < weights_.blocks.size(); ++b) {
    const bool stacked = b == 0;
    site(weights_.blocks[b].up.context(), rows, c.block_channels(b), stacked ? pieces : 1);
    if (stacked) stacked_out(weights_.blocks[b].up.context(), rows, weights_.blocks[b].up.stride, c.block_channels(1));
    rows *= weights_.blocks[b].up.stride;
    if (stacked) merged_floats = rows * c.block_channels(1);
    act(rows, c.block_channels(b + 1));
    for (const ResidualUnitWeights& unit : weights_.blocks[b].units) site(unit.conv1.context(), rows, c.block_channels(b + 1));
  }
  site(weights_.last_conv.context(), rows, c.block_channels(weights_.blocks.size()));

  scratch_ = std::make_unique<CodecScratch>(backend, hparams_, arch);
  scratch_->workspace.reserve(n, 0);
  scratch_->ids = backend.allocate(static_cast<size_t>(c.num_quantizers * n) * sizeof(int32_t));
  for (auto* b : {&scratch_->in_a, &scratch_->in_b}) *b = backend.allocate(static_cast<size_t>(site_floats) * sizeof(float));
  for (auto* b : {&scratch_->x, &scratch_->t1, &scratch_->t2})
    *b = backend.allocate(static_cast<size_t>(act_floats) * sizeof(float));
  scratch_->merged = backend.allocate(static_cast<size_t>(merged_floats) * sizeof(float));
}

CodecDecoder::CodecDecoder(CodecDecoder&&) noexcept = default;
CodecDecoder::~CodecDecoder() = default;

CodecDecoder CodecDecoder::load(const loader::TensorSet& set, const CodecConfig& config, backends::Backend& backend,
                                int64_t max_chunk_frames, CodecPrecision precision) {
  if (max_chunk_frames < 1) throw std::invalid_argument("codec decoder: max_chunk_frames must be positive");
  return CodecDecoder(config, backend, load_codec_weights(set, config, backend, precision), max_chunk_frames);
}

CodecStream CodecDecoder::start() { return CodecStream(*this); }

std::vector<float> CodecDecoder::decode_all(std::span<const int32_t> codes) {
  CodecStream stream = start();
  std::vector<float> pcm;
  pcm.reserve(codes.size() / static_cast<size_t>(config_.num_quantizers) * static_cast<size_t>(config_.samples_per_frame));
  stream.decode(codes, pcm);
  return pcm;
}

void CodecDecoder::check_codes(std::span<const int32_t> codes) const {
  const auto q = static_cast<size_t>(config_.num_quantizers);
  if (codes.size() % q != 0)
    throw std::invalid_argument("codec codes: " + std::to_string(codes.size()) + " values are not whole frames of " +
                                std::to_string(q) + " codes");
  for (size_t i = 0; i < codes.size(); ++i)
    if (codes[i] < 0 || codes[i] >= config_.codebook_size)
      throw std::invalid_argument("codec codes: frame " + std::to_string(i / q) + " codebook " +
                                  std::to_string(i % q) + " has code " + std::to_string(codes[i]) +
                                  " outside [0, " + std::to_string(config_.codebook_size) + ")");
}

CodecStream::CodecStream(CodecDecoder& decoder) : decoder_(&decoder) {
  backends::Backend& be = decoder.backend();
  kv_ = std::make_unique<KvCache>(be, decoder.hparams_,
                                  KvCacheConfig{decoder.ring_blocks_, kCodecKvBlockSize, DType::F32});
  const std::vector<ConvSite> sites = conv_sites(decoder.config_, decoder.weights_);
  int64_t floats = 0;
  for (const ConvSite& s : sites) floats += s.context * s.channels;
  context_ = be.allocate(static_cast<size_t>(std::max<int64_t>(floats, 1)) * sizeof(float));
  size_t offset = 0;
  for (const ConvSite& s : sites) {
    if (s.context == 0) {
      conv_context_.emplace_back();
      continue;
    }
    conv_context_.push_back(Tensor::make(context_.get(), offset, DType::F32, {s.context, s.channels}));
    be.fill_zero(conv_context_.back());
    offset += static_cast<size_t>(s.context * s.channels) * sizeof(float);
  }
  context_bytes_ = offset;
}

CodecStream CodecStream::clone() const {
  CodecStream copy(*decoder_);
  backends::Backend& be = decoder_->backend();
  for (int64_t i = 0; i < kv_->num_layers(); ++i) {
    be.copy(kv_->layer(i).k, copy.kv_->layer(i).k);
    be.copy(kv_->layer(i).v, copy.kv_->layer(i).v);
  }
  for (size_t i = 0; i < conv_context_.size(); ++i)
    if (conv_context_[i]) be.copy(conv_context_[i], copy.conv_context_[i]);
  copy.block_table_ = block_table_;
  copy.position_ = position_;
  return copy;
}

uint64_t CodecStream::bytes() const { return kv_->bytes_per_block() * static_cast<uint64_t>(kv_->num_blocks()) + context_bytes_; }

CodecStream::CodecStream(CodecStream&&) noexcept = default;
CodecStream& CodecStream::operator=(CodecStream&&) noexcept = default;
CodecStream::~CodecStream() = default;

void CodecStream::decode(std::span<const int32_t> codes, std::vector<float>& pcm_out) {
  const CodecPiece piece{this, codes, &pcm_out};
  decoder_->decode_together({&piece, 1});
}

void CodecDecoder::decode_together(std::span<const CodecPiece> pieces) {
  for (const CodecPiece& piece : pieces) check_codes(piece.codes);
  // Steps of at most max_chunk_frames frames and kMaxStreamsPerStep pieces, each
  // taking the next frames of every piece that has some left, in order.
  const auto q = static_cast<size_t>(config_.num_quantizers);
  std::vector<size_t> done(pieces.size(), 0);  // values of each piece decoded
  std::vector<CodecPiece> step;
  for (;;) {
    step.clear();
    size_t room = static_cast<size_t>(max_chunk_frames_) * q;
    for (size_t i = 0; i < pieces.size() && room > 0 && step.size() < kMaxStreamsPerStep; ++i) {
      const size_t take = std::min(room, pieces[i].codes.size() - done[i]);
      if (take == 0) continue;
      step.push_back({pieces[i].stream, pieces[i].codes.subspan(done[i], take), pieces[i].pcm_out});
      done[i] += take;
      room -= take;
    }
    if (step.empty()) return;
    decode_group(step);
  }
}

}  // namespace sluice::engine::tts
