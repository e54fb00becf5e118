// Reference audio decoding: the speech endpoint's own encoders (FFmpeg) write a
// tone as WAV, FLAC, Ogg Opus and MP3; decode_reference_audio reads it back at
// 24 kHz mono. A stereo 16 kHz WAV (written here byte by byte) checks the channel
// mean and the resampler; bad bytes and limits give ReferenceAudioError.
#include "server/audio/reference_audio.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "server/audio/audio_encoder.h"

namespace sluice::server::unit_server_audio_test_reference_audio {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::vector<float> tone(int rate, double seconds, double hz, double amplitude) {
  std::vector<float> out(static_cast<size_t>(rate * seconds));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<float>(amplitude * std::sin(2 * kPi * hz * static_cast<double>(i) / rate));
  return out;
}

std::string encode(std::string_view format, const std::vector<float>& samples, int rate) {
  auto encoder = make_audio_encoder(format, rate, AudioDelivery::whole);
  std::string bytes = encoder->push(samples);
  return bytes + encoder->finish();
}

void put_le(std::string& out, uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

// A 16-bit PCM WAV of interleaved frames.
std::string stereo_wav(const std::vector<int16_t>& interleaved, int rate) {
  const auto data_bytes = static_cast<uint32_t>(interleaved.size() * 2);
  std::string out = "RIFF";
  put_le(out, 36 + data_bytes, 4);
  out += "WAVEfmt ";
  put_le(out, 16, 4);
  put_le(out, 1, 2);  // PCM
  put_le(out, 2, 2);  // channels
  put_le(out, static_cast<uint32_t>(rate), 4);
  put_le(out, static_cast<uint32_t>(rate * 4), 4);
  put_le(out, 4, 2);
  put_le(out, 16, 2);
  out += "data";
  put_le(out, data_bytes, 4);
  for (int16_t v : interleaved) put_le(out, static_cast<uint16_t>(v), 2);
  return out;
}

// The amplitude of an hz tone in x (rate Hz), by correlation with sin and cos.
double tone_amplitude(const std::vector<float>& x, int rate, double hz) {
  double s = 0, c = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double phase = 2 * kPi * hz * static_cast<double>(i) / rate;
    s += x[i] * std::sin(phase);
    c += x[i] * std::cos(phase);
  }
  return 2.0 * std::sqrt(s * s + c * c) / static_cast<double>(x.size());
}

std::string error_of(std::string_view bytes, const ReferenceAudioLimits& limits = {}) {
  try {
    decode_reference_audio(bytes, 24000, limits);
  } catch (const ReferenceAudioError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("reference audio: WAV, FLAC, Ogg Opus and MP3 decode to 24 kHz mono") {
  const std::vector<float> clip = tone(24000, 1.0, 440.0, 0.5);
  for (const char* format : {"wav", "flac", "opus", "mp3"}) {
    CAPTURE(format);
    const std::vector<float> got = decode_reference_audio(encode(format, clip, 24000), 24000);
    // Lossy codecs keep their length within a frame of padding or delay.
    CHECK(std::abs(static_cast<double>(got.size()) - 24000.0) <= 1200.0);
    CHECK(std::abs(tone_amplitude(got, 24000, 440.0) - 0.5) <= 0.03);
    if (std::string(format) == "wav" || std::string(format) == "flac") {
      REQUIRE(got.size() == clip.size());
      double max_err = 0;
      for (size_t i = 0; i < got.size(); ++i) max_err = std::max(max_err, std::abs(double(got[i]) - clip[i]));
      CHECK(max_err <= 1.0 / 32768.0);  // 16-bit rounding
    }
  }
}

TEST_CASE("reference audio: stereo 16 kHz is the channel mean, resampled to ceil(n * 3 / 2) samples") {
  // Left 300 Hz at 0.6, right 1000 Hz at 0.2: the mean holds 300 Hz at 0.3 and 1000 Hz at 0.1.
  const int rate = 16000, frames = 8001;
  std::vector<int16_t> interleaved;
  for (int i = 0; i < frames; ++i) {
    interleaved.push_back(static_cast<int16_t>(std::lround(0.6 * 32767 * std::sin(2 * kPi * 300.0 * i / rate))));
    interleaved.push_back(static_cast<int16_t>(std::lround(0.2 * 32767 * std::sin(2 * kPi * 1000.0 * i / rate))));
  }
  const std::vector<float> got = decode_reference_audio(stereo_wav(interleaved, rate), 24000);
  CHECK(got.size() == 12002u);
  CHECK(std::abs(tone_amplitude(got, 24000, 300.0) - 0.3) <= 0.005);
  CHECK(std::abs(tone_amplitude(got, 24000, 1000.0) - 0.1) <= 0.005);
  CHECK(tone_amplitude(got, 24000, 5000.0) <= 0.005);
}

TEST_CASE("reference audio: bad bytes and clips outside the limits are refused") {
  CHECK(error_of("") == "is empty");
  CHECK(error_of("this is not audio at all, just some text that goes on for a while").find(
            "is not WAV, FLAC, MP3 or Ogg audio") == 0);
  const std::string wav = encode("wav", tone(24000, 2.0, 440.0, 0.5), 24000);
  CHECK(error_of(wav, {.max_seconds = 1.5}) == "is longer than 1.5 s");
  CHECK(error_of(wav, {.max_seconds = 30, .min_seconds = 3}) == "is shorter than 3 s");
  CHECK(error_of(wav).empty());
  // A WAV cut inside its header.
  CHECK(!error_of(wav.substr(0, 20)).empty());
  // AAC is a format the speech endpoint writes but not one a reference may use.
  CHECK(error_of(encode("aac", tone(24000, 0.5, 440.0, 0.5), 24000)).find("is not WAV, FLAC, MP3 or Ogg audio") == 0);
}

}  // namespace sluice::server
