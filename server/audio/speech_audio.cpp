#include "server/audio/speech_audio.h"

#include <sonic.h>
#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::server {

namespace {

constexpr float kMinSpeed = 0.25f, kMaxSpeed = 4.0f;
constexpr int32_t kMinRate = 8000, kMaxRate = 48000;

}  // namespace

// Time-stretch without a pitch change: libsonic's pitch-synchronous overlap-add,
// made for speech.
class SpeechAudio::Stretcher {
 public:
  Stretcher(int32_t rate, float speed) : speed_(speed), stream_(sonicCreateStream(rate, 1)) {
    if (stream_ == nullptr) throw std::runtime_error("libsonic: cannot create a stream");
    sonicSetSpeed(stream_, speed);
  }
  ~Stretcher() { sonicDestroyStream(stream_); }
  Stretcher(const Stretcher&) = delete;
  Stretcher& operator=(const Stretcher&) = delete;

  // Appends to `out` what the stream releases after taking `pcm`.
  void push(std::span<const float> pcm, std::vector<float>& out) {
    // sonic takes an int count; a piece is a few frames, but never trust that.
    constexpr size_t kMaxPiece = 1 << 20;
    for (size_t at = 0; at < pcm.size(); at += kMaxPiece) {
      const size_t count = std::min(kMaxPiece, pcm.size() - at);
      // sonic reads the samples only; its C API just does not say const.
      if (sonicWriteFloatToStream(stream_, const_cast<float*>(pcm.data() + at), static_cast<int>(count)) == 0)
        throw std::runtime_error("libsonic: out of memory");
      num_in_ += static_cast<int64_t>(count);
      drain(out);
    }
  }
  // Appends the rest: sonic processes what it held back for the next pitch period.
  void finish(std::vector<float>& out) {
    if (sonicFlushStream(stream_) == 0) throw std::runtime_error("libsonic: out of memory");
    const size_t at = out.size();
    drain(out);
    // A flush pads the held-back samples with silence to push them through, and at
    // slow speeds the stretched padding outlasts the signal (27 ms at 0.25): cut the
    // tail back to the length the speed promises.
    const auto promised = static_cast<int64_t>(std::llround(static_cast<double>(num_in_) / speed_));
    const int64_t num_cut = std::min(static_cast<int64_t>(out.size() - at), num_out_ - promised);
    if (num_cut > 0) {
      out.resize(out.size() - static_cast<size_t>(num_cut));
      num_out_ -= num_cut;
    }
  }

 private:
  void drain(std::vector<float>& out) {
    for (int available; (available = sonicSamplesAvailable(stream_)) > 0;) {
      const size_t at = out.size();
      out.resize(at + static_cast<size_t>(available));
      const int got = sonicReadFloatFromStream(stream_, out.data() + at, available);
      out.resize(at + static_cast<size_t>(std::max(got, 0)));
      if (got <= 0) break;
      num_out_ += got;
    }
  }

  float speed_;
  sonicStream stream_;
  int64_t num_in_ = 0;   // samples written
  int64_t num_out_ = 0;  // samples read back
};

// A streaming resampler: libsoxr at its high quality (the default of soxr_create).
class SpeechAudio::Resampler {
 public:
  Resampler(int32_t from, int32_t to) : ratio_(static_cast<double>(to) / from) {
    soxr_error_t error = nullptr;
    const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_ = soxr_create(from, to, 1, &error, &io, nullptr, nullptr);
    if (error != nullptr || soxr_ == nullptr)
      throw std::runtime_error(std::string("libsoxr: cannot resample ") + std::to_string(from) + " Hz to " +
                               std::to_string(to) + " Hz: " + soxr_strerror(error));
  }
  ~Resampler() { soxr_delete(soxr_); }
  Resampler(const Resampler&) = delete;
  Resampler& operator=(const Resampler&) = delete;

  // Appends to `out` what the resampler releases after taking `pcm`.
  void push(std::span<const float> pcm, std::vector<float>& out) {
    // An empty span's data() may be null, which soxr reads as the end of the signal.
    if (pcm.empty()) return;
    // Room for this piece's share plus slack; go round again while soxr fills it.
    const size_t room = static_cast<size_t>(std::ceil(static_cast<double>(pcm.size()) * ratio_)) + 64;
    for (size_t at = 0;;) {
      size_t num_taken = 0;
      const size_t num_out = process(pcm.data() + at, pcm.size() - at, &num_taken, room, out);
      at += num_taken;
      if (at >= pcm.size() && num_out < room) break;
      if (num_taken == 0 && num_out == 0) break;
    }
  }
  // Appends the rest: a null input tells soxr the signal has ended.
  void finish(std::vector<float>& out) {
    constexpr size_t kRoom = 4096;
    while (process(nullptr, 0, nullptr, kRoom, out) > 0) {
    }
  }

 private:
  size_t process(const float* in, size_t num_in, size_t* num_taken, size_t room, std::vector<float>& out) {
    const size_t at = out.size();
    out.resize(at + room);
    size_t num_out = 0;
    const soxr_error_t error = soxr_process(soxr_, in, num_in, num_taken, out.data() + at, room, &num_out);
    out.resize(at + num_out);
    if (error != nullptr) throw std::runtime_error(std::string("libsoxr: ") + error);
    return num_out;
  }

  double ratio_;
  soxr_t soxr_ = nullptr;
};

std::optional<proto::ApiError> SpeechAudio::options_error(const SpeechAudioOptions& options) {
  // `!(a <= x)` so that NaN fails too.
  if (!(options.speed >= kMinSpeed && options.speed <= kMaxSpeed))
    return proto::invalid_request("speed " + std::to_string(options.speed) + " is outside 0.25..4", "speed");
  if (options.input_rate <= 0) return proto::invalid_request("the model's sample rate must be positive");
  const int32_t rate = options.output_rate == 0 ? options.input_rate : options.output_rate;
  if (rate != options.input_rate && (rate < kMinRate || rate > kMaxRate))
    return proto::invalid_request("sample_rate " + std::to_string(rate) + " is outside 8000..48000", "sample_rate");
  const std::string_view format = proto::audio_format_name(options.format);
  const std::vector<int> rates = audio_format_sample_rates(format);
  if (!rates.empty() && std::find(rates.begin(), rates.end(), rate) == rates.end()) {
    std::string usable;
    for (const int r : rates) {
      if (r < kMinRate || r > kMaxRate) continue;
      usable += (usable.empty() ? "" : ", ") + std::to_string(r);
    }
    return proto::invalid_request("sample_rate " + std::to_string(rate) + " is not one " + std::string(format) +
                                      " can encode (use " + usable + ")",
                                  "sample_rate");
  }
  return std::nullopt;
}

SpeechAudio::SpeechAudio(const SpeechAudioOptions& options)
    : output_rate_(options.output_rate == 0 ? options.input_rate : options.output_rate) {
  if (const auto error = options_error(options)) throw std::runtime_error(error->message);
  if (options.speed != 1.0f) stretcher_ = std::make_unique<Stretcher>(options.input_rate, options.speed);
  if (output_rate_ != options.input_rate) resampler_ = std::make_unique<Resampler>(options.input_rate, output_rate_);
  encoder_ = make_audio_encoder(proto::audio_format_name(options.format), output_rate_, options.delivery);
}

SpeechAudio::~SpeechAudio() = default;

std::string SpeechAudio::push(std::span<const float> pcm) {
  if (!stretcher_ && !resampler_) return encode(pcm);
  std::vector<float> stretched, resampled;
  std::span<const float> piece = pcm;
  if (stretcher_) {
    stretcher_->push(piece, stretched);
    piece = stretched;
  }
  if (resampler_) {
    resampler_->push(piece, resampled);
    piece = resampled;
  }
  return encode(piece);
}

std::string SpeechAudio::finish() {
  std::string bytes;
  if (stretcher_) {
    // What sonic held back still has to go through the resampler.
    std::vector<float> stretched, resampled;
    stretcher_->finish(stretched);
    std::span<const float> piece = stretched;
    if (resampler_) {
      resampler_->push(piece, resampled);
      piece = resampled;
    }
    bytes += encode(piece);
  }
  if (resampler_) {
    std::vector<float> rest;
    resampler_->finish(rest);
    bytes += encode(rest);
  }
  return bytes + encoder_->finish();
}

std::string SpeechAudio::encode(std::span<const float> pcm) {
  num_samples_out_ += static_cast<int64_t>(pcm.size());
  return encoder_->push(pcm);
}

}  // namespace sluice::server
