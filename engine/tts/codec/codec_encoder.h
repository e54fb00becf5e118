#pragma once
// The Qwen3-TTS 12 Hz codec encoder: mono PCM at sample_rate -> codes, num_codes
// per frame of samples_per_frame samples (the reference codes of voice cloning's
// ICL prompt). The official model (Qwen3TTSTokenizerV2Encoder, qwen_tts/core/
// tokenizer_12hz/modeling_qwen3_tts_tokenizer_v2.py) is a transformers MimiModel
// encoder; this runs the same computation on the Backend ops:
//   SEANet   causal convs with ELU, a residual unit and a strided conv per stage
//            (24 kHz -> 25 Hz), run over the audio in chunks of chunk_samples with
//            each conv's left context carried over, so memory does not grow with
//            the clip and a chunked pass equals a whole one bit for bit;
//   transformer  LayerNorm / causal attention with RoPE / GELU MLP, LayerScale,
//            over every 25 Hz frame at once (no sliding window, as the official
//            package computes it: codec_encoder_transformer.cpp);
//   downsample   a stride-2 conv with replicate padding (25 -> 12.5 Hz);
//   split RVQ    the semantic and the acoustic quantizer each project the frames
//            (input_proj) and pick, codebook after codebook, the table row nearest
//            (Euclidean) to the residual, subtracting it. The distances are a
//            matmul on the backend; the argmin runs on the host (codebook_size
//            values per frame and codebook).
// One thread at a time (the caller's) encodes.
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/codec/codec_encoder_config.h"
#include "engine/tts/codec/codec_encoder_weights.h"

namespace sluice::engine::tts {

struct CodecEncoderScratch;

class CodecEncoder {
 public:
  // Samples one SEANet step takes at most (2 s at 24 kHz): the activations are
  // sized for it (about 25 MB at the real config), whatever the clip's length.
  static constexpr int64_t kDefaultChunkSamples = 48000;

  // Loads and prepares the weights (codec_encoder_weights.h) and allocates the
  // SEANet scratch. chunk_samples is rounded up to a multiple of the SEANet
  // stride. Throws loader::LoadError naming the file and tensor for a bad
  // checkpoint, std::invalid_argument for a chunk size below 1.
  static CodecEncoder load(const loader::TensorSet& set, const CodecEncoderConfig& config, backends::Backend& backend,
                           int64_t chunk_samples = kDefaultChunkSamples);

  CodecEncoder(CodecEncoder&&) noexcept;
  ~CodecEncoder();

  // Codes [frames, num_codes] row-major (codebook 0, the semantic one, first),
  // frames = ceil(samples.size() / samples_per_frame). Throws std::invalid_argument,
  // before any kernel runs, for no samples or a sample that is not finite.
  std::vector<int32_t> encode(std::span<const float> samples);

  // For parity tests: called with each stage's output, [rows, channels] on the
  // backend, before the next stage runs: "seanet" (25 Hz frames, hidden),
  // "transformer", "downsample" (12.5 Hz), "semantic_proj", "acoustic_proj".
  using StageHook = std::function<void(std::string_view stage, const backends::Tensor& activation)>;
  void set_stage_hook(StageHook hook) { stage_hook_ = std::move(hook); }

  const CodecEncoderConfig& config() const { return config_; }
  int64_t chunk_samples() const { return chunk_samples_; }

 private:
  CodecEncoder(const CodecEncoderConfig& config, backends::Backend& backend, CodecEncoderWeights weights,
               int64_t chunk_samples);

  // Writes the SEANet output of every 25 Hz frame into `out` [frames, hidden].
  void run_seanet(std::span<const float> samples, const backends::Tensor& out);
  // In place over x [frames, hidden].
  void run_transformer(const backends::Tensor& x);
  // x [frames, hidden] -> out [ceil(frames / stride), hidden].
  void run_downsample(const backends::Tensor& x, const backends::Tensor& out);
  // y [frames, hidden] -> codes [frames, num_codes].
  std::vector<int32_t> quantize(const backends::Tensor& y);
  void stage(std::string_view name, const backends::Tensor& t) const {
    if (stage_hook_) stage_hook_(name, t);
  }

  CodecEncoderConfig config_;
  backends::Backend* backend_;
  CodecEncoderWeights weights_;
  int64_t chunk_samples_;
  std::unique_ptr<CodecEncoderScratch> scratch_;
  StageHook stage_hook_;
};

}  // namespace sluice::engine::tts
