// Reference audio for voice cloning (server/audio/audio_decoder.h) against what the
// official qwen-tts wrapper loads from the same files (tests/fixtures/qwen3_tts/
// speaker_golden/*.samples.bin: soundfile's float32 read, the channel mean, then
// librosa.resample to 24 kHz): the 24 kHz mono clip bit for bit; the 16 kHz stereo
// clip within 1e-5 after resampling (both resample with libsoxr's high quality, the
// wrapper through python-soxr, sluice in one soxr_oneshot call: measured equal).
// Bad bytes fail with a reason.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include "server/audio/audio_decoder.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::server::unit_server_audio_test_audio_decoder {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(SLUICE_FIXTURES_DIR) / "qwen3_tts";
constexpr double kResampleTolerance = 1e-5;

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot open " << path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

std::string error_of(std::span<const std::byte> bytes, const AudioDecodeLimits& limits = {}) {
  try {
    decode_audio_bytes(bytes, limits);
  } catch (const AudioDecodeError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("audio decoder: the reference clips load as the official wrapper loads them") {
  const DecodedAudio mono = read_audio_file(kFixtures / "reference_audio" / "voice_24k.wav");
  CHECK(mono.sample_rate == 24000);
  CHECK(mono.samples == read_floats(kFixtures / "speaker_golden" / "voice_24k.samples.bin"));
  CHECK(resample_audio(mono.samples, 24000, 24000) == mono.samples);

  const DecodedAudio stereo = read_audio_file(kFixtures / "reference_audio" / "voice_16k_stereo.wav");
  CHECK(stereo.sample_rate == 16000);
  CHECK(stereo.samples.size() == 12800);  // 0.8 s, the two channels mixed into one
  const std::vector<float> resampled = resample_audio(stereo.samples, 16000, 24000);
  const std::vector<float> want = read_floats(kFixtures / "speaker_golden" / "voice_16k_stereo.samples.bin");
  REQUIRE(resampled.size() == want.size());
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(resampled[i]) - want[i]));
  MESSAGE("16 kHz stereo -> 24 kHz: max difference from librosa.resample " << worst);
  CHECK(worst <= kResampleTolerance);
}

TEST_CASE("audio decoder: bytes that are not audio, empty or too long are refused with a reason") {
  const std::string text = "RIFF....WAVEfmt this is not a wave file at all";
  CHECK(error_of(std::as_bytes(std::span(text))).find("not an audio format") != std::string::npos);
  CHECK(error_of({}).find("empty") != std::string::npos);

  std::ifstream in(kFixtures / "reference_audio" / "voice_24k.wav", std::ios::binary);
  const std::vector<char> wav((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto bytes = std::as_bytes(std::span<const char>(wav));
  CHECK(error_of(bytes, {.max_seconds = 0.5}).find("longer than") != std::string::npos);
  CHECK(error_of(bytes).empty());
  // Cut short: the header promises more than there is; FFmpeg reads what is there.
  CHECK(decode_audio_bytes(bytes.first(bytes.size() / 2)).samples.size() < 19200);
  CHECK_THROWS_AS(read_audio_file(kFixtures / "reference_audio" / "missing.wav"), AudioDecodeError);
}

}  // namespace sluice::server
