#pragma once
// The FFmpeg side of make_audio_encoder: one libavcodec encoder feeding one
// libavformat muxer that writes into memory.
#include <cstdint>
#include <memory>
#include <vector>

#include "server/audio/audio_encoder.h"

namespace sluice::server {

struct FfmpegAudioFormat {
  const char* muxer;         // libavformat short name: "mp3", "ogg", "adts", "flac", "wav"
  const char* codec;         // libavcodec encoder name: "libmp3lame", "libopus", ...
  int64_t bit_rate;          // bits per second; 0 for the lossless ones
  double frame_seconds;      // codec frame length to ask for; 0 keeps the codec's own
  const char* content_type;  // HTTP Content-Type
};

// The rates the codec lists, ascending; empty when it lists none (any rate).
std::vector<int> ffmpeg_codec_sample_rates(const FfmpegAudioFormat& format);

// Throws std::runtime_error naming the codec when FFmpeg cannot open it.
std::unique_ptr<AudioEncoder> make_ffmpeg_audio_encoder(const FfmpegAudioFormat& format, int sample_rate,
                                                        AudioDelivery delivery);

}  // namespace sluice::server
