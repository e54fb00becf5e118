#pragma once
// The Qwen3-TTS 12 Hz codec decoder: frames of num_quantizers codes -> PCM at
// output_sample_rate, samples_per_frame samples per frame, clamped to [-1, 1].
//
// Every stage is causal (convolutions with left context, right-trimmed transposed
// convolutions, a sliding-window transformer), so a CodecStream carries each conv's
// last input rows, the transformer's KV ring and its position from one call to the
// next, and decoding an utterance in pieces of any size gives the same samples, bit
// for bit on the CPU, as decoding it at once (decode_all). This equals the official
// decoder's single pass over the whole utterance (its 300-frame chunked decode,
// Qwen3TTSTokenizerV2Decoder.chunked_decode, differs from that beyond 300 frames).
//
// The pre_transformer runs the shared decoder block (engine/models/
// transformer_block.h) over the paged KV cache: each stream owns a small cache whose
// blocks are recycled as frames leave the 72-frame window (see codec_decoder.cpp).
//
// CodecDecoder owns the weights and the activation scratch that its streams share:
// one thread at a time (the engine thread) decodes, on any of its streams. A stream
// points at its decoder: neither may move or die while the other is in use.
#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/models/hparams.h"
#include "engine/models/kv_cache.h"
#include "engine/tts/codec/codec_config.h"
#include "engine/tts/codec/codec_weights.h"

namespace sluice::engine::tts {

class CodecDecoder;
class CodecStream;
struct CodecScratch;

// One stream's piece of a CodecDecoder::decode_together call: whole frames of codes
// ([frames, num_quantizers] row-major) whose samples go to the end of *pcm_out.
struct CodecPiece {
  CodecStream* stream = nullptr;
  std::span<const int32_t> codes;
  std::vector<float>* pcm_out = nullptr;
};

// One utterance being decoded: owns its conv contexts, KV ring and position (on
// the decoder's backend). Called by the thread that uses its decoder.
class CodecStream {
 public:
  CodecStream(CodecStream&&) noexcept;
  CodecStream& operator=(CodecStream&&) noexcept;
  ~CodecStream();

  // Decodes n frames (codes [n, num_quantizers] row-major int32) and appends
  // n * samples_per_frame samples to pcm_out. Throws std::invalid_argument, before
  // any kernel runs, when codes.size() is not a multiple of num_quantizers or a
  // code lies outside [0, codebook_size); the stream is then unchanged.
  void decode(std::span<const int32_t> codes, std::vector<float>& pcm_out);

  int64_t num_frames() const { return position_; }

  // A second stream in this one's state (its contexts, KV ring and position copied
  // on the backend): decoding the same frames on either gives the same samples. An
  // ICL voice's stream primed with its reference codes is kept and cloned per request.
  CodecStream clone() const;

  // Device bytes the stream holds (its KV ring and conv contexts).
  uint64_t bytes() const;

 private:
  friend class CodecDecoder;
  explicit CodecStream(CodecDecoder& decoder);

  CodecDecoder* decoder_;
  std::unique_ptr<KvCache> kv_;                    // ring_blocks blocks of the pre_transformer's KV
  std::unique_ptr<backends::Buffer> context_;      // every conv's saved left context
  std::vector<backends::Tensor> conv_context_;     // per conv site, [context rows, channels]
  std::vector<int32_t> block_table_;               // entry i = block i % ring_blocks
  int64_t position_ = 0;                           // frames decoded so far
  uint64_t context_bytes_ = 0;
};

class CodecDecoder {
 public:
  // Frames one internal step decodes at most: activations are sized for it
  // (about 3.7 MB per frame at the real config), so a long utterance never needs
  // more than that, whatever size of piece a caller hands in.
  static constexpr int64_t kDefaultMaxChunkFrames = 50;
  // Streams one internal step decodes at most (decode_together).
  static constexpr size_t kMaxStreamsPerStep = 8;

  // Loads and prepares the weights (codec_weights.h) and allocates the scratch.
  // Throws loader::LoadError naming the file and tensor for a bad checkpoint.
  // precision int16 throws std::invalid_argument on a backend without int16 convs.
  static CodecDecoder load(const loader::TensorSet& set, const CodecConfig& config, backends::Backend& backend,
                           int64_t max_chunk_frames = kDefaultMaxChunkFrames,
                           CodecPrecision precision = CodecPrecision::f32);

  CodecDecoder(CodecDecoder&&) noexcept;
  ~CodecDecoder();

  // A fresh stream: zero context, position 0.
  CodecStream start();
  // A fresh stream fed every frame: codes [n, num_quantizers] -> n * samples_per_frame samples.
  std::vector<float> decode_all(std::span<const int32_t> codes);

  // Decodes several streams' pieces together: the stages that read many weights for
  // the few rows of a piece (the RVQ, the pre_transformer, the upsampler, the first
  // conv and the first block's transposed conv) run once over every piece's rows, up
  // to max_chunk_frames frames and kMaxStreamsPerStep streams a step; the rest runs
  // piece by piece. Each stream's samples are those of decoding its piece alone (bit
  // for bit on the CPU: rows of different streams never mix). The pieces' streams
  // must be distinct streams of this decoder. Throws std::invalid_argument, before
  // any kernel runs, as CodecStream::decode does for any piece; no stream changes.
  void decode_together(std::span<const CodecPiece> pieces);

  // For parity tests: called with each stage's output of every chunk, [rows,
  // channels] on the backend ("rvq", "pre_conv", "pre_transformer", "upsample",
  // "decoder_0", "decoder_1"), before the next stage runs.
  using StageHook = std::function<void(std::string_view stage, const backends::Tensor& activation)>;
  void set_stage_hook(StageHook hook) { stage_hook_ = std::move(hook); }

  const CodecConfig& config() const { return config_; }
  backends::Backend& backend() const { return *backend_; }
  int64_t max_chunk_frames() const { return max_chunk_frames_; }

 private:
  friend class CodecStream;
  CodecDecoder(const CodecConfig& config, backends::Backend& backend, CodecWeights weights, int64_t max_chunk_frames);

  // Throws std::invalid_argument for codes a stream must not run.
  void check_codes(std::span<const int32_t> codes) const;
  // Decodes checked pieces of distinct streams, at most max_chunk_frames frames in
  // all and kMaxStreamsPerStep pieces (codec_forward.cpp).
  void decode_group(std::span<const CodecPiece> pieces);

  CodecConfig config_;
  backends::Backend* backend_;
  CodecWeights weights_;
  ModelHparams hparams_;       // the pre_transformer as a llama-style sliding-window model
  int64_t max_chunk_frames_;
  int64_t ring_blocks_;        // KV blocks a stream keeps: the window plus one chunk, rounded up
  std::unique_ptr<CodecScratch> scratch_;
  StageHook stage_hook_;
};

}  // namespace sluice::engine::tts
