#pragma once
// Reference audio for voice cloning (`ref_audio`, an uploaded voice): the bytes of
// a WAV, FLAC, MP3 or Ogg (Opus, Vorbis) file decoded with FFmpeg's libavformat
// and libavcodec from memory (never a file name or URL), mixed down to mono by
// averaging the channels and resampled with libsoxr at its high quality to the
// rate the model reads (24 kHz): what the official loader does (soundfile, the
// channel mean, librosa's default soxr_hq resampler).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::server {

// Bad reference audio; what() is the message for a 400 (it names no field: the
// caller knows which one it decoded).
class ReferenceAudioError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ReferenceAudioLimits {
  double max_seconds = 30.0;  // longer clips are refused (before resampling)
  double min_seconds = 0.0;   // shorter ones too
};

// Mono samples at target_rate. Throws ReferenceAudioError for bytes that are not
// audio of an accepted container and codec, that hold no audio stream or no
// samples, or that are longer than limits.max_seconds or shorter than
// limits.min_seconds.
std::vector<float> decode_reference_audio(std::string_view bytes, int target_rate,
                                          const ReferenceAudioLimits& limits = {});

// The resampling step alone (libsoxr, high quality, whole signal): mono samples at
// from_rate -> to_rate, ceil-free length round(n * to / from) as soxr's one-shot
// call gives it. from_rate == to_rate returns the samples as they are.
std::vector<float> resample_mono(const std::vector<float>& samples, int from_rate, int to_rate);

}  // namespace sluice::server
