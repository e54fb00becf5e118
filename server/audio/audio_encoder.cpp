#include "server/audio/audio_encoder.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "server/audio/audio_samples.h"
#include "server/audio/ffmpeg_audio_encoder.h"

namespace sluice::server {
namespace {

// Speech at 24 kHz mono: these rates sound clean for speech and stay small.
// Codec frames of 80 ms for FLAC give one FLAC frame per model frame (the codec's
// own choice at 24 kHz is longer and would hold audio back); the lossy codecs keep
// their fixed frames (MP3 576 samples, AAC 1024, Opus 20 ms).
constexpr FfmpegAudioFormat kMp3{"mp3", "libmp3lame", 64000, 0, "audio/mpeg"};
constexpr FfmpegAudioFormat kOpus{"ogg", "libopus", 32000, 0, "audio/opus"};
constexpr FfmpegAudioFormat kAac{"adts", "aac", 64000, 0, "audio/aac"};
constexpr FfmpegAudioFormat kFlac{"flac", "flac", 0, 0.080, "audio/flac"};
constexpr FfmpegAudioFormat kWav{"wav", "pcm_s16le", 0, 0, "audio/wav"};

// `pcm`: 16-bit signed little-endian samples, no header; streamed, nothing is held back.
class PcmEncoder final : public AudioEncoder {
 public:
  explicit PcmEncoder(AudioDelivery delivery) : delivery_(delivery) {}

  std::string push(std::span<const float> samples) override {
    const size_t at = held_.size();
    held_.resize(at + 2 * samples.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      const auto value = static_cast<uint16_t>(to_s16(samples[i]));
      held_[at + 2 * i] = static_cast<char>(value & 0xff);
      held_[at + 2 * i + 1] = static_cast<char>(value >> 8);
    }
    return delivery_ == AudioDelivery::stream ? std::exchange(held_, {}) : std::string();
  }
  std::string finish() override { return std::exchange(held_, {}); }
  std::string_view content_type() const override { return "audio/pcm"; }

 private:
  AudioDelivery delivery_;
  std::string held_;  // bytes not yet released
};

// The FFmpeg codec and muxer of every format but pcm.
const FfmpegAudioFormat& ffmpeg_format(std::string_view format) {
  if (format == "mp3") return kMp3;
  if (format == "opus") return kOpus;
  if (format == "aac") return kAac;
  if (format == "flac") return kFlac;
  if (format == "wav") return kWav;
  throw std::invalid_argument("unknown audio format '" + std::string(format) +
                              "' (use mp3, opus, aac, flac, wav or pcm)");
}

}  // namespace

bool is_audio_format(std::string_view format) {
  return format == "mp3" || format == "opus" || format == "aac" || format == "flac" || format == "wav" ||
         format == "pcm";
}

std::vector<int> audio_format_sample_rates(std::string_view format) {
  if (format == "pcm") return {};
  return ffmpeg_codec_sample_rates(ffmpeg_format(format));
}

std::unique_ptr<AudioEncoder> make_audio_encoder(std::string_view format, int sample_rate, AudioDelivery delivery) {
  if (format == "pcm") return std::make_unique<PcmEncoder>(delivery);
  return make_ffmpeg_audio_encoder(ffmpeg_format(format), sample_rate, delivery);
}

}  // namespace sluice::server
