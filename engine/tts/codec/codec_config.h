#pragma once
// The shape of the Qwen3-TTS 12 Hz codec decoder (codes -> 24 kHz PCM), read from
// speech_tokenizer/config.json: its decoder_config plus the top-level rates, checked
// once so the decoder can trust it. Plain data; any thread.
//
// Derived sizes the decoder uses: the RVQ tables are [codebook_size, codebook_dim/2]
// projected to codebook_dim; decoder block i maps decoder_dim / 2^i channels to
// decoder_dim / 2^(i+1) while upsampling by upsample_rates[i]; one frame becomes
// prod(upsampling_ratios) * prod(upsample_rates) samples (= decode_upsample_rate).
#include <cstdint>
#include <filesystem>
#include <vector>

namespace sluice::engine::tts {

struct CodecConfig {
  int64_t num_quantizers = 0;     // codes per frame (1 semantic + the acoustic ones)
  int64_t codebook_size = 0;      // rows of each RVQ table; codes lie in [0, codebook_size)
  int64_t codebook_dim = 0;       // the quantizer's output channels (its tables are half that wide)
  int64_t latent_dim = 0;         // pre_conv output, transformer in/out, upsampler channels
  int64_t decoder_dim = 0;        // channels of the first decoder conv
  // The pre_transformer (a sliding-window llama-style decoder without q/k norms).
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int32_t sliding_window = 0;     // a query sees itself and the previous sliding_window - 1 frames
  std::vector<int64_t> upsampling_ratios;  // the ConvNeXt upsampler's strides
  std::vector<int64_t> upsample_rates;     // the decoder blocks' strides
  int64_t output_sample_rate = 0;
  int64_t samples_per_frame = 0;  // decode_upsample_rate

  int64_t table_dim() const { return codebook_dim / 2; }
  // Input channels of decoder block i (i = num blocks gives the last block's output).
  int64_t block_channels(size_t i) const { return decoder_dim >> i; }
};

// Reads speech_tokenizer/config.json. Throws loader::LoadError naming the file and
// the key for a missing, mistyped or inconsistent value (e.g. decode_upsample_rate
// that is not the product of the strides, an activation other than silu).
CodecConfig read_codec_config(const std::filesystem::path& config_json);

// The published Qwen3-TTS-Tokenizer-12Hz values (speech_tokenizer/config.json of
// Qwen/Qwen3-TTS-12Hz-0.6B-Base), for benchmarks and random-weight tests without
// the files.
CodecConfig codec_config_preset();

}  // namespace sluice::engine::tts
