#include "server/audio/speech_audio.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/unit/server/audio/audio_decode.h"

namespace sluice::server::unit_server_audio_test_speech_audio {
namespace {

constexpr int kRate = 24000;
constexpr double kTone = 440.0;

// `seconds` of a 440 Hz sine at half scale, at the model's 24 kHz.
std::vector<float> sine(double seconds = 1.0) {
  std::vector<float> samples(static_cast<size_t>(seconds * kRate));
  for (size_t i = 0; i < samples.size(); ++i)
    samples[i] = 0.5f * static_cast<float>(std::sin(2.0 * M_PI * kTone * static_cast<double>(i) / kRate));
  return samples;
}

struct Output {
  std::string bytes;
  size_t num_before_finish = 0;  // bytes released by push()
  int64_t samples_out = 0;
  int32_t output_rate = 0;
};

// Pushes `samples` in pieces of the given sizes, round and round, then finishes.
Output run(const SpeechAudioOptions& options, const std::vector<float>& samples,
           const std::vector<size_t>& pieces = {1920}) {
  SpeechAudio audio(options);
  Output out;
  size_t at = 0;
  for (size_t n = 0; at < samples.size(); ++n) {
    const size_t count = std::min(pieces[n % pieces.size()], samples.size() - at);
    out.bytes += audio.push(std::span<const float>(samples).subspan(at, count));
    at += count;
  }
  out.num_before_finish = out.bytes.size();
  out.bytes += audio.finish();
  out.samples_out = audio.samples_out();
  out.output_rate = audio.output_rate();
  return out;
}

// The tone's frequency from upward zero crossings over the middle of the signal,
// away from the edges where stretchers, filters and codecs ramp in and out.
double frequency(const ReadBackAudio& audio) {
  const size_t from = audio.samples.size() / 5, to = audio.samples.size() * 4 / 5;
  size_t first = 0, last = 0, num_crossings = 0;
  for (size_t i = from + 1; i < to; ++i) {
    if (audio.samples[i - 1] < 0 && audio.samples[i] >= 0) {
      if (num_crossings == 0) first = i;
      last = i;
      ++num_crossings;
    }
  }
  if (num_crossings < 2) return 0;
  return static_cast<double>(num_crossings - 1) * audio.sample_rate / static_cast<double>(last - first);
}

double seconds(const ReadBackAudio& audio) {
  return static_cast<double>(audio.samples.size()) / audio.channels / audio.sample_rate;
}

SpeechAudioOptions pcm_at(float speed, int32_t output_rate = 0) {
  SpeechAudioOptions options;
  options.format = proto::AudioFormat::pcm;
  options.speed = speed;
  options.output_rate = output_rate;
  return options;
}

}  // namespace

TEST_CASE("speech audio: speed changes the duration by 1/speed and keeps the pitch") {
  const std::vector<float> input = sine();
  for (const float speed : {2.0f, 0.5f, 0.25f, 4.0f, 1.5f}) {
    CAPTURE(speed);
    const Output out = run(pcm_at(speed), input);
    const ReadBackAudio decoded = decode_audio("pcm", out.bytes, kRate);
    CHECK(static_cast<int64_t>(decoded.samples.size()) == out.samples_out);
    MESSAGE("speed " << speed << ": " << decoded.samples.size() << " samples, " << frequency(decoded) << " Hz");
    CHECK(std::abs(seconds(decoded) - 1.0 / speed) <= 0.005);  // a few ms
    CHECK(frequency(decoded) == doctest::Approx(kTone).epsilon(0.02));
  }
}

TEST_CASE("speech audio: resampling keeps the duration and the frequency, and the header says the rate") {
  const std::vector<float> input = sine();
  for (const int32_t rate : {16000, 48000, 8000, 22050}) {
    CAPTURE(rate);
    SpeechAudioOptions options;
    options.format = proto::AudioFormat::wav;
    options.output_rate = rate;
    const Output out = run(options, input);
    CHECK(out.output_rate == rate);
    const ReadBackAudio decoded = decode_audio("wav", out.bytes, rate);
    CHECK(decoded.sample_rate == rate);
    CHECK(decoded.channels == 1);
    CHECK(static_cast<int64_t>(decoded.samples.size()) == out.samples_out);
    MESSAGE(rate << " Hz: " << decoded.samples.size() << " samples, " << frequency(decoded) << " Hz");
    CHECK(std::abs(seconds(decoded) - 1.0) <= 0.005);
    CHECK(frequency(decoded) == doctest::Approx(kTone).epsilon(0.02));
  }
}

TEST_CASE("speech audio: speed 1 at the model's rate is the plain encoder, bit for bit") {
  const std::vector<float> input = sine(0.5);
  for (const auto format : {proto::AudioFormat::pcm, proto::AudioFormat::wav, proto::AudioFormat::flac}) {
    const std::string name(proto::audio_format_name(format));
    CAPTURE(name);
    const auto encoder = make_audio_encoder(name, kRate, AudioDelivery::stream);
    std::string plain = encoder->push(input);
    plain += encoder->finish();
    for (const int32_t output_rate : {0, kRate}) {  // 0 and the input rate both mean "keep"
      SpeechAudioOptions options;
      options.format = format;
      options.output_rate = output_rate;
      const Output out = run(options, input, {input.size()});
      CHECK(out.bytes == plain);
      CHECK(out.samples_out == static_cast<int64_t>(input.size()));
      CHECK(out.output_rate == kRate);
    }
  }
}

TEST_CASE("speech audio: uneven pushes give the same audio length as one push") {
  const std::vector<float> input = sine();
  for (const float speed : {1.0f, 1.5f, 0.5f}) {
    for (const int32_t rate : {0, 16000}) {
      CAPTURE(speed);
      CAPTURE(rate);
      const Output whole = run(pcm_at(speed, rate), input, {input.size()});
      const Output uneven = run(pcm_at(speed, rate), input, {1, 7, 1920, 3000});
      CHECK(uneven.samples_out == whole.samples_out);
      CHECK(uneven.bytes.size() == whole.bytes.size());
    }
  }
}

TEST_CASE("speech audio: every format decodes at speed 1.5 and 16 kHz") {
  const std::vector<float> input = sine();
  for (const auto format : {proto::AudioFormat::mp3, proto::AudioFormat::opus, proto::AudioFormat::aac,
                            proto::AudioFormat::flac, proto::AudioFormat::wav, proto::AudioFormat::pcm}) {
    const std::string name(proto::audio_format_name(format));
    CAPTURE(name);
    SpeechAudioOptions options;
    options.format = format;
    options.speed = 1.5f;
    options.output_rate = 16000;
    const Output out = run(options, input, {1920});
    // Streamed: most of it is out before finish(), not only a header.
    CHECK(out.num_before_finish > out.bytes.size() / 2);
    const ReadBackAudio decoded = decode_audio(name, out.bytes, 16000);
    CHECK(decoded.sample_rate == 16000);
    CHECK(decoded.channels == 1);
    const double expected = static_cast<double>(out.samples_out) / 16000;
    CHECK(std::abs(expected - 1.0 / 1.5) <= 0.005);
    // Lossy codecs pad up to a couple of frames; lossless ones give the samples exactly.
    CHECK(seconds(decoded) >= expected - 0.001);
    CHECK(seconds(decoded) <= expected + 0.15);
    MESSAGE(name << ": " << seconds(decoded) << " s, " << frequency(decoded) << " Hz");
    CHECK(frequency(decoded) == doctest::Approx(kTone).epsilon(0.02));
  }
}

TEST_CASE("speech audio: whole delivery holds everything for finish, with the exact length in the header") {
  SpeechAudioOptions options;
  options.format = proto::AudioFormat::wav;
  options.speed = 2.0f;
  options.output_rate = 16000;
  options.delivery = AudioDelivery::whole;
  const Output out = run(options, sine(), {1, 7, 1920, 3000});
  CHECK(out.num_before_finish == 0);
  const ReadBackAudio decoded = decode_audio("wav", out.bytes, 16000);
  CHECK(decoded.sample_rate == 16000);
  CHECK(static_cast<int64_t>(decoded.samples.size()) == out.samples_out);
  CHECK(std::abs(seconds(decoded) - 0.5) <= 0.005);
  const size_t data = out.bytes.find("data");
  REQUIRE(data != std::string::npos);
  uint32_t data_bytes = 0;
  for (int i = 3; i >= 0; --i) data_bytes = (data_bytes << 8) | static_cast<uint8_t>(out.bytes[data + 4 + static_cast<size_t>(i)]);
  CHECK(data_bytes == 2 * out.samples_out);
}

TEST_CASE("speech audio: audio streams out while pieces come in") {
  const std::vector<float> input = sine();
  SpeechAudio audio(pcm_at(1.5f, 16000));
  // One 80 ms model frame at a time: sonic and soxr hold back a little, not all.
  size_t num_pushes_with_bytes = 0;
  for (size_t at = 0; at < input.size(); at += 1920) {
    const size_t count = std::min<size_t>(1920, input.size() - at);  // the last piece is half a frame
    if (!audio.push(std::span<const float>(input).subspan(at, count)).empty()) ++num_pushes_with_bytes;
  }
  CHECK(num_pushes_with_bytes >= 10);  // of 12.5
  CHECK(audio.content_type() == "audio/pcm");
}

TEST_CASE("speech audio: options out of range are refused with the option's name") {
  auto refused = [](SpeechAudioOptions options, const char* name) {
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(SpeechAudio{options}, doctest::Contains(name), std::runtime_error);
  };
  refused(pcm_at(5.0f), "speed");
  refused(pcm_at(0.2f), "speed");
  refused(pcm_at(std::numeric_limits<float>::quiet_NaN()), "speed");
  refused(pcm_at(1.0f, 96000), "sample_rate");
  refused(pcm_at(1.0f, 4000), "sample_rate");
  SpeechAudioOptions opus = pcm_at(1.0f, 22050);
  opus.format = proto::AudioFormat::opus;
  refused(opus, "sample_rate");
  const auto error = SpeechAudio::options_error(opus);
  REQUIRE(error.has_value());
  CHECK(error->status == 400);
  CHECK(error->param == "sample_rate");
  CHECK(error->message.find("8000, 12000, 16000, 24000, 48000") != std::string::npos);
  CHECK(SpeechAudio::options_error(pcm_at(5.0f))->param == "speed");
  CHECK_FALSE(SpeechAudio::options_error(pcm_at(1.0f, 22050)).has_value());
  CHECK(SpeechAudio(pcm_at(0.25f, 8000)).output_rate() == 8000);
  CHECK(SpeechAudio(pcm_at(4.0f, 48000)).output_rate() == 48000);
}

}  // namespace sluice::server
