#include "server/audio/audio_encoder.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/unit/server/audio/audio_decode.h"

namespace sluice::server::unit_server_audio_test_audio_encoder {
namespace {

constexpr int kRate = 24000;

// 1.0 s of a 440 Hz sine at half scale.
std::vector<float> sine() {
  std::vector<float> samples(kRate);
  for (size_t i = 0; i < samples.size(); ++i)
    samples[i] = 0.5f * static_cast<float>(std::sin(2.0 * M_PI * 440.0 * static_cast<double>(i) / kRate));
  return samples;
}

struct Encoded {
  std::string bytes;             // the whole stream
  size_t num_before_finish = 0;  // bytes released by push()
  size_t num_after_first_80ms = 0;  // bytes out once 80 ms (one model frame) is in
};

// Pushes in uneven pieces, as a model's frames and a server's writes would arrive.
Encoded encode_in_pieces(std::string_view format, const std::vector<float>& samples, AudioDelivery delivery) {
  const auto encoder = make_audio_encoder(format, kRate, delivery);
  const size_t pieces[] = {1, 480, 1920, 7, 3000, 13, 2400};
  Encoded out;
  size_t at = 0;
  for (size_t n = 0; at < samples.size(); ++n) {
    const size_t count = std::min(pieces[n % std::size(pieces)], samples.size() - at);
    out.bytes += encoder->push(std::span<const float>(samples).subspan(at, count));
    at += count;
    if (at - count < kRate * 80 / 1000 && at >= kRate * 80 / 1000) out.num_after_first_80ms = out.bytes.size();
  }
  out.num_before_finish = out.bytes.size();
  out.bytes += encoder->finish();
  return out;
}

using Decoded = ReadBackAudio;

Decoded decode(std::string_view format, const std::string& bytes) { return decode_audio(format, bytes, kRate); }

// The best normalized correlation of the decoded audio with the sine over the
// codec's possible delays (lossy encoders prepend up to a couple of frames).
double best_correlation(const std::vector<float>& decoded, const std::vector<float>& reference) {
  constexpr size_t kFrom = kRate / 10, kTo = kRate * 8 / 10, kMaxDelay = 4096;
  double best = 0;
  for (size_t delay = 0; delay <= kMaxDelay && kTo + delay <= decoded.size(); ++delay) {
    double dot = 0, a2 = 0, b2 = 0;
    for (size_t i = kFrom; i < kTo; ++i) {
      dot += double(decoded[i + delay]) * reference[i];
      a2 += double(decoded[i + delay]) * decoded[i + delay];
      b2 += double(reference[i]) * reference[i];
    }
    if (a2 > 0) best = std::max(best, dot / std::sqrt(a2 * b2));
  }
  return best;
}

struct FormatCase {
  std::string format;
  bool is_lossless;
  double max_padding_seconds;  // what the codec may add to 1.0 s when streamed
};

void check_streams_and_decodes(const FormatCase& c) {
  CAPTURE(c.format);
  const std::vector<float> reference = sine();
  const Encoded encoded = encode_in_pieces(c.format, reference, AudioDelivery::stream);
  MESSAGE(c.format << ": " << encoded.bytes.size() << " bytes for 1.0 s; " << encoded.num_after_first_80ms
                   << " bytes out after the first 80 ms pushed; " << encoded.num_before_finish << " before finish()");
  // Streaming: most of the stream is out before finish(), not only a header.
  CHECK(encoded.num_before_finish > encoded.bytes.size() / 2);
  const Decoded decoded = decode(c.format, encoded.bytes);
  CHECK(decoded.sample_rate == kRate);
  CHECK(decoded.channels == 1);
  const double seconds = static_cast<double>(decoded.samples.size()) / kRate;
  CHECK(seconds >= 1.0);
  CHECK(seconds <= 1.0 + c.max_padding_seconds);
  if (c.is_lossless) {
    REQUIRE(decoded.samples.size() == reference.size());
    float worst = 0;
    for (size_t i = 0; i < reference.size(); ++i) worst = std::max(worst, std::abs(decoded.samples[i] - reference[i]));
    CHECK(worst <= 1.0f / 32768);
  } else {
    CHECK(best_correlation(decoded.samples, reference) > 0.9);
  }
}

}  // namespace

TEST_CASE("audio encoder: wav streams a header of unknown length, then the samples exactly") {
  check_streams_and_decodes({"wav", true, 0});
  const Encoded encoded = encode_in_pieces("wav", sine(), AudioDelivery::stream);
  REQUIRE(encoded.bytes.size() >= 44);
  CHECK(encoded.bytes.substr(0, 4) == "RIFF");
  CHECK(encoded.bytes.substr(4, 4) == std::string(4, '\xff'));  // RIFF size unknown
  const size_t data = encoded.bytes.find("data");
  REQUIRE(data != std::string::npos);
  CHECK(encoded.bytes.substr(data + 4, 4) == std::string(4, '\xff'));  // data size unknown
  CHECK(encoded.num_after_first_80ms >= 44 + 2 * kRate * 80 / 1000);   // the header and the samples, at once
}

TEST_CASE("audio encoder: pcm streams raw s16le with nothing held back") {
  check_streams_and_decodes({"pcm", true, 0});
  const Encoded encoded = encode_in_pieces("pcm", sine(), AudioDelivery::stream);
  CHECK(encoded.bytes.size() == 2 * kRate);
  CHECK(encoded.num_before_finish == encoded.bytes.size());
}

TEST_CASE("audio encoder: flac streams frames that decode to the samples exactly") {
  check_streams_and_decodes({"flac", true, 0});
}

TEST_CASE("audio encoder: mp3 streams frames that decode to the sine") {
  check_streams_and_decodes({"mp3", false, 0.1});
}

TEST_CASE("audio encoder: opus streams Ogg pages that decode to the sine") {
  check_streams_and_decodes({"opus", false, 0.05});
}

TEST_CASE("audio encoder: aac streams ADTS frames that decode to the sine") {
  check_streams_and_decodes({"aac", false, 0.15});
}

TEST_CASE("audio encoder: content types are OpenAI's, and an unknown format is refused") {
  const std::pair<const char*, const char*> expected[] = {
      {"mp3", "audio/mpeg"}, {"opus", "audio/opus"}, {"aac", "audio/aac"},
      {"flac", "audio/flac"}, {"wav", "audio/wav"},   {"pcm", "audio/pcm"}};
  for (const auto& [format, type] : expected) {
    CAPTURE(std::string(format));
    CHECK(is_audio_format(format));
    CHECK(make_audio_encoder(format, kRate)->content_type() == type);
  }
  CHECK_FALSE(is_audio_format("ogg"));
  CHECK_FALSE(is_audio_format("MP3"));
  CHECK_THROWS_WITH_AS(make_audio_encoder("mp4", kRate), doctest::Contains("'mp4'"), std::invalid_argument);
}

TEST_CASE("audio encoder: each format lists the sample rates its codec takes") {
  CHECK(audio_format_sample_rates("opus") == std::vector<int>{8000, 12000, 16000, 24000, 48000});
  for (const char* format : {"mp3", "aac"}) {
    CAPTURE(std::string(format));
    const std::vector<int> rates = audio_format_sample_rates(format);
    for (const int rate : {8000, 11025, 16000, 22050, 24000, 44100, 48000})
      CHECK(std::find(rates.begin(), rates.end(), rate) != rates.end());
    CHECK(std::find(rates.begin(), rates.end(), 9000) == rates.end());
  }
  for (const char* format : {"flac", "wav", "pcm"}) CHECK(audio_format_sample_rates(format).empty());
  CHECK_THROWS_AS(audio_format_sample_rates("mp4"), std::invalid_argument);
}

TEST_CASE("audio encoder: samples outside [-1, 1] are clipped, not wrapped") {
  // Wrapped, 1.5 would come back negative and -1.5 positive.
  const std::vector<float> loud = {1.5f, -1.5f, 1.0f, -1.0f, 0.5f, std::numeric_limits<float>::quiet_NaN()};
  for (const std::string format : {"pcm", "wav", "flac"}) {
    CAPTURE(format);
    const auto encoder = make_audio_encoder(format, kRate);
    std::string bytes = encoder->push(loud);
    bytes += encoder->finish();
    const Decoded decoded = decode(format, bytes);
    REQUIRE(decoded.samples.size() == loud.size());
    CHECK(decoded.samples[0] == 32767.0f / 32768);
    CHECK(decoded.samples[1] == -1.0f);
    CHECK(decoded.samples[2] == 32767.0f / 32768);
    CHECK(decoded.samples[3] == -1.0f);
    CHECK(decoded.samples[4] == 0.5f);
    CHECK(decoded.samples[5] == 0.0f);
  }
}

TEST_CASE("audio encoder: whole delivery releases everything at finish with the exact length in the header") {
  const std::vector<float> reference = sine();
  for (const std::string format : {"wav", "flac", "mp3", "opus", "pcm"}) {
    CAPTURE(format);
    const Encoded encoded = encode_in_pieces(format, reference, AudioDelivery::whole);
    CHECK(encoded.num_before_finish == 0);
    const Decoded decoded = decode(format, encoded.bytes);
    // MP3 too: its LAME header tells the decoder the encoder's delay and padding.
    CHECK(decoded.samples.size() == reference.size());
  }
  const std::string wav = encode_in_pieces("wav", reference, AudioDelivery::whole).bytes;
  const auto le32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(wav[at + static_cast<size_t>(i)]);
    return v;
  };
  CHECK(le32(4) == wav.size() - 8);
  CHECK(le32(wav.find("data") + 4) == 2 * reference.size());
}

}  // namespace sluice::server
