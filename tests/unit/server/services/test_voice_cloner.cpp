// VoiceCloner on the tiny Base checkpoint: the clip's x-vector is the speaker
// encoder's over decode_reference_audio's samples, the ICL codes are the codec
// encoder's (one frame of 16 per 1920 samples), and clips it cannot use give
// ReferenceAudioError with the reason.
#include "server/services/voice_cloner.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/tts/codec/codec_encoder_config.h"
#include "engine/tts/model/tts_model.h"
#include "server/audio/audio_encoder.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::server::unit_server_services_test_voice_cloner {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(SLUICE_FIXTURES_DIR) / "qwen3_tts";
const fs::path kBase = kFixtures / "base_small";

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string wav_tone(double seconds) {
  std::vector<float> samples(static_cast<size_t>(24000 * seconds));
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = 0.3f * std::sin(0.05f * static_cast<float>(i));
  auto encoder = make_audio_encoder("wav", 24000, AudioDelivery::whole);
  std::string bytes = encoder->push(samples);
  return bytes + encoder->finish();
}

VoiceCloner make_cloner(double max_seconds = 30.0) {
  const engine::tts::TtsConfig config = engine::tts::read_tts_config(kBase);
  REQUIRE(config.speaker_encoder);
  return VoiceCloner(kBase, *config.speaker_encoder, backends::BackendSpec{.kind = backends::DeviceKind::cpu}, 1,
                     ReferenceAudioLimits{.max_seconds = max_seconds}, nullptr);
}

}  // namespace

TEST_CASE("voice cloner: the x-vector and codes of a clip, as the encoders give them") {
  VoiceCloner cloner = make_cloner();
  const std::string clip = read_file(kFixtures / "reference_audio" / "voice_24k.wav");
  const std::vector<float> samples = decode_reference_audio(clip, 24000);

  auto cpu = backends::make_cpu_backend(1);
  const auto model = engine::tts::TtsModel::load(kBase, *cpu);
  const std::vector<float> want = model->speaker_encoder()->embed(samples);

  const VoiceReference xvector = cloner.clone(clip, /*with_codes=*/false);
  CHECK(xvector.speaker_embedding == want);  // the same kernels on the same samples: bit for bit
  CHECK(xvector.ref_codes.empty());

  const VoiceReference icl = cloner.clone(clip, /*with_codes=*/true);
  CHECK(icl.speaker_embedding == want);
  const auto config = engine::tts::read_codec_encoder_config(kBase / "speech_tokenizer" / "config.json");
  CHECK(static_cast<int64_t>(icl.ref_codes.size()) == config.frames_for(static_cast<int64_t>(samples.size())) * 16);
  CHECK(cloner.num_code_groups() == 16);
}

TEST_CASE("voice cloner: bytes that are not audio, and clips too long or too short, are refused with why") {
  VoiceCloner cloner = make_cloner(/*max_seconds=*/1.0);
  auto refusal = [&](const std::string& bytes) -> std::string {
    try {
      cloner.clone(bytes, true);
    } catch (const ReferenceAudioError& e) {
      return e.what();
    }
    FAIL("no ReferenceAudioError");
    return {};
  };
  CHECK(refusal("these are not samples").find("is not WAV") != std::string::npos);
  CHECK(refusal(wav_tone(1.5)).find("longer than") != std::string::npos);
  CHECK(refusal(wav_tone(0.005)).find("too short") != std::string::npos);
  CHECK(cloner.clone(wav_tone(0.5), true).ref_codes.size() == 7 * 16);  // ceil(12000 / 1920) frames
}

}  // namespace sluice::server
