#pragma once
// The speaker encoder's shape (speaker_encoder_config in a Base checkpoint's
// config.json): what the encoder and its weight loader need. tts_config.h reads it.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice::engine::tts {

// The Base checkpoints' speaker encoder (speaker_encoder_config in config.json; the
// official Qwen3TTSSpeakerEncoder): an ECAPA-TDNN over 128-bin log-mels of 24 kHz
// audio. Entry i of the three lists describes layer i: 0 the first TDNN, 1..n-2 the
// SE-Res2Net blocks, n-1 the multi-layer aggregation over the blocks' concatenated
// outputs.
struct SpeakerEncoderConfig {
  int64_t mel_dim = 128;
  int64_t enc_dim = 1024;  // the x-vector's width: the talker's hidden size
  std::vector<int64_t> channels{512, 512, 512, 512, 1536};
  std::vector<int64_t> kernel_sizes{5, 3, 3, 3, 1};
  std::vector<int64_t> dilations{1, 2, 3, 4, 1};
  int64_t attention_channels = 128;
  int64_t res2net_scale = 8;
  int64_t se_channels = 128;
  int32_t sample_rate = 24000;

  size_t num_layers() const { return channels.size(); }
  int64_t pooled_channels() const { return channels.back(); }
};

}  // namespace sluice::engine::tts
