#pragma once
// The shape of the Qwen3-TTS 12 Hz codec encoder (24 kHz PCM -> codes), read from
// speech_tokenizer/config.json: its encoder_config (a transformers MimiConfig) plus
// the top-level rates, checked once so the encoder can trust it. Plain data; any
// thread.
//
// The encoder (transformers' MimiModel, models/mimi/modeling_mimi.py, as
// Qwen3TTSTokenizerV2Encoder uses it): a SEANet stack of causal convolutions that
// downsamples by prod(strides) (960: 25 Hz), a transformer over those frames, a
// causal conv that downsamples by downsample_stride (2: 12.5 Hz), and a split
// residual vector quantizer of which the first num_codes codebooks are kept.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace sluice::engine::tts {

struct CodecEncoderConfig {
  int64_t sample_rate = 0;          // of the input PCM (input_sample_rate)
  // SEANet: conv(1 -> num_filters, kernel_size), then per stride s (in order):
  // a residual unit at channels c, ELU, conv(c -> 2c, kernel 2s, stride s);
  // then ELU and conv(-> hidden_size, last_kernel_size). Channels double per stage.
  int64_t num_filters = 0;
  int64_t kernel_size = 0;
  int64_t residual_kernel_size = 0;  // the unit's first conv; its second is k1
  int64_t last_kernel_size = 0;
  int64_t compress = 0;              // a unit's hidden channels are c / compress
  std::vector<int64_t> strides;      // config upsampling_ratios reversed: 4, 5, 6, 8
  // The transformer (LayerNorm with bias, GELU MLP, LayerScale, RoPE, causal; the
  // config's sliding_window is not applied: codec_encoder_transformer.cpp says why).
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int64_t downsample_stride = 0;     // kernel 2 * stride, replicate padding, no bias
  // The quantizer: input_proj hidden_size -> codebook_dim per RVQ; tables [codebook_size, codebook_dim].
  int64_t codebook_size = 0;
  int64_t codebook_dim = 0;
  int64_t num_quantizers = 0;        // stored: semantic + acoustic
  int64_t num_semantic = 0;
  int64_t num_codes = 0;             // kept per frame (encoder_valid_num_quantizers)
  int64_t samples_per_frame = 0;     // encode_downsample_rate

  int64_t seanet_stride() const {
    int64_t product = 1;
    for (int64_t s : strides) product *= s;
    return product;
  }
  // Channels entering SEANet stage i (i = strides.size(): the last conv's input).
  int64_t stage_channels(size_t i) const { return num_filters << i; }
  // Code frames for n input samples: ceil(n / samples_per_frame).
  int64_t frames_for(int64_t samples) const { return (samples + samples_per_frame - 1) / samples_per_frame; }
};

// Reads speech_tokenizer/config.json. Throws loader::LoadError naming the file and
// the key for a missing, mistyped or unsupported value (a non-causal conv, padding
// other than constant, a conv shortcut, an activation other than gelu, rates that
// do not multiply to encode_downsample_rate).
CodecEncoderConfig read_codec_encoder_config(const std::filesystem::path& config_json);

// The published Qwen3-TTS-Tokenizer-12Hz encoder (encoder_config in
// speech_tokenizer/config.json of Qwen/Qwen3-TTS-12Hz-0.6B-Base), for benchmarks
// and random-weight tests without the files.
CodecEncoderConfig codec_encoder_config_preset();

}  // namespace sluice::engine::tts
