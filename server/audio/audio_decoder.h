#pragma once
// Reading reference audio for voice cloning: encoded bytes (WAV, FLAC, MP3, Ogg
// Opus/Vorbis, ... whatever FFmpeg's demuxers and decoders take) to mono float
// samples at their own rate, mixed down as the official package does (the mean
// of the channels). Integer formats are scaled by 2^-(bits-1) like libsndfile's
// float reads. Untrusted input: every failure is a DecodeError with a message for
// the client, never a crash; the limits bound the work. Any thread.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <vector>

namespace sluice::server {

struct DecodedAudio {
  int sample_rate = 0;
  std::vector<float> samples;  // mono
};

struct AudioDecodeLimits {
  double max_seconds = 60.0;  // decoded audio beyond this is refused
};

class AudioDecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws AudioDecodeError when the bytes are not audio FFmpeg reads, hold no audio
// stream, decode to nothing, or run past the limits.
DecodedAudio decode_audio_bytes(std::span<const std::byte> bytes, const AudioDecodeLimits& limits = {});
// The same for a file (AudioDecodeError also when it cannot be read).
DecodedAudio read_audio_file(const std::filesystem::path& path, const AudioDecodeLimits& limits = {});

// `samples` at `from` Hz resampled to `to` Hz with libsoxr's high quality (what
// librosa.resample's default soxr_hq uses), the whole signal at once:
// ceil(n * to / from) samples. The input itself when the rates are equal.
std::vector<float> resample_audio(std::span<const float> samples, int from, int to);

}  // namespace sluice::server
