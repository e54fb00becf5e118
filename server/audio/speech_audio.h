#pragma once
// The audio side of one /v1/audio/speech response: the engine's mono float PCM, in
// pieces as frames are decoded, becomes the bytes of the response format as they
// come. On the way the samples are time-stretched to `speed` without a pitch change
// (libsonic) and resampled to `output_rate` (libsoxr); each stage is skipped, not run
// at unity, when it would change nothing, so speed 1 at the model's rate gives the
// plain encoder's bytes bit for bit.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "proto/errors.h"
#include "proto/speech.h"
#include "server/audio/audio_encoder.h"

namespace sluice::server {

struct SpeechAudioOptions {
  proto::AudioFormat format = proto::AudioFormat::mp3;
  int32_t input_rate = 24000;  // Hz of the samples pushed
  int32_t output_rate = 0;     // Hz of the response, 8000..48000; 0: input_rate
  float speed = 1.0f;          // 0.25..4: 2 says the same in half the time
  AudioDelivery delivery = AudioDelivery::stream;
};

// One response's pipeline: speed -> rate -> encoder. Owned and called by one
// thread at a time (the session writing the response).
class SpeechAudio {
 public:
  // The 400 for options this pipeline cannot serve, naming the request field
  // (`speed`, `sample_rate`): a speed outside 0.25..4, a rate outside 8000..48000,
  // or one the format's codec does not take (Opus has five). Call before answering.
  static std::optional<proto::ApiError> options_error(const SpeechAudioOptions& options);

  // Throws std::runtime_error naming the option (as options_error) or the library
  // that failed.
  explicit SpeechAudio(const SpeechAudioOptions& options);
  ~SpeechAudio();
  SpeechAudio(const SpeechAudio&) = delete;
  SpeechAudio& operator=(const SpeechAudio&) = delete;

  // Takes the next samples (any count, even 0) and returns the encoded bytes they
  // release now, possibly none: the stretcher, the resampler and the codec each
  // hold a little back.
  std::string push(std::span<const float> pcm);
  // Flushes the stretcher, the resampler and the encoder; returns the rest of the
  // stream. Call once, last.
  std::string finish();

  int32_t output_rate() const { return output_rate_; }
  std::string_view content_type() const { return encoder_->content_type(); }
  // Samples handed to the encoder so far, after speed and rate: the audio's length.
  int64_t samples_out() const { return num_samples_out_; }

 private:
  class Stretcher;  // libsonic
  class Resampler;  // libsoxr

  std::string encode(std::span<const float> pcm);

  int32_t output_rate_;
  std::unique_ptr<Stretcher> stretcher_;  // null at speed 1
  std::unique_ptr<Resampler> resampler_;  // null when the rate stays
  std::unique_ptr<AudioEncoder> encoder_;
  int64_t num_samples_out_ = 0;
};

}  // namespace sluice::server
