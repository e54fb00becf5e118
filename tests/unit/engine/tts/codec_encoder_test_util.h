#pragma once
// Shared by the codec encoder tests: a small config that has every part of the
// encoder (two SEANet stages of odd and even stride, GQA heads, several acoustic
// codebooks of which some are dropped) and a deterministic test signal.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/tts/codec/codec_encoder_config.h"

namespace sluice::engine::tts::test {

inline CodecEncoderConfig small_encoder_config() {
  CodecEncoderConfig c;
  c.sample_rate = 24000;
  c.num_filters = 4;
  c.kernel_size = 7;
  c.residual_kernel_size = 3;
  c.last_kernel_size = 3;
  c.compress = 2;
  c.strides = {3, 4};
  c.hidden_size = 16;
  c.intermediate_size = 32;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.downsample_stride = 2;
  c.codebook_size = 16;
  c.codebook_dim = 8;
  c.num_quantizers = 6;
  c.num_semantic = 1;
  c.num_codes = 4;
  c.samples_per_frame = 24;
  return c;
}

// A tone with noise, amplitude about 0.5.
inline std::vector<float> test_signal(int64_t samples, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  std::vector<float> out(static_cast<size_t>(samples));
  for (int64_t i = 0; i < samples; ++i)
    out[static_cast<size_t>(i)] = 0.4f * std::sin(0.037f * static_cast<float>(i)) + noise(rng);
  return out;
}

}  // namespace sluice::engine::tts::test
