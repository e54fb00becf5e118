// The codec decoder with int16 convolutions (CodecPrecision::int16,
// backends/conv_int16.h) against the F32 decoder, the reference numerics:
//  - the official fixture's waveform (tests/fixtures/qwen3_tts) within 40 dB SNR
//    (measured 44.8 dB; the F32 decoder is at ~100 dB);
//  - random weights at the real 12 Hz config (Cin up to 1536: ~1200 levels a side):
//    the first vocoder block's output within 40 dB of the F32 decoder's (measured
//    48 dB; the upsampler's 63 dB, decoder.0's 60 dB). Not the waveform: random
//    weights drive it into the [-1, 1] clamp (rms 0.9995), a square wave whose
//    sign flips at the zero crossings make any SNR of it meaningless (17 dB);
//  - streaming frame by frame equals one pass bit for bit, as in F32.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/synthetic/random_tensor_set.h"
#include "engine/tts/codec/codec_decoder.h"
#include "tests/unit/engine/tts/codec_test_util.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::tts::unit_engine_tts_test_codec_int16 {
namespace {

double snr_db(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double signal = 0, noise = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    signal += double(want[i]) * want[i];
    noise += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
  }
  return 10.0 * std::log10(signal / std::max(noise, 1e-300));
}

std::vector<float> decode_frame_by_frame(CodecDecoder& decoder, const std::vector<int32_t>& codes) {
  const auto q = static_cast<size_t>(decoder.config().num_quantizers);
  CodecStream stream = decoder.start();
  std::vector<float> pcm;
  for (size_t at = 0; at < codes.size(); at += q) stream.decode(std::span<const int32_t>(codes).subspan(at, q), pcm);
  return pcm;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("codec decoder int16: the official fixture's waveform within 40 dB SNR; streamed equals whole") {
  const std::filesystem::path fixture = std::filesystem::path(SLUICE_FIXTURES_DIR) / "qwen3_tts";
  const std::filesystem::path golden = fixture / "codec_golden";
  if (!testing::has_model_file(golden / "codes.json", "codec int16 parity",
                               "tests/fixtures/qwen3_tts/make_fixtures.py (branch tts-fixtures)"))
    return;
  const nlohmann::json meta = nlohmann::json::parse(std::ifstream(golden / "codes.json"));
  std::vector<int32_t> codes;
  for (const auto& frame : meta.at("codes"))
    for (const auto& code : frame) codes.push_back(code.get<int32_t>());
  std::ifstream in(golden / "waveform.bin", std::ios::binary);
  REQUIRE(in);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> official(bytes.size() / sizeof(float));
  std::memcpy(official.data(), bytes.data(), official.size() * sizeof(float));

  const CodecConfig config = read_codec_config(fixture / "speech_tokenizer" / "config.json");
  auto set = loader::open_tensor_set(fixture / "speech_tokenizer");
  auto backend = backends::make_cpu_backend(2);
  CodecDecoder f32 = CodecDecoder::load(*set, config, *backend);
  CodecDecoder int16 = CodecDecoder::load(*set, config, *backend, CodecDecoder::kDefaultMaxChunkFrames, CodecPrecision::int16);
  const std::vector<float> pcm = int16.decode_all(codes);
  const double snr_official = snr_db(pcm, official), snr_f32 = snr_db(pcm, f32.decode_all(codes));
  MESSAGE("int16 codec on the fixture: SNR " << snr_official << " dB to the official waveform, " << snr_f32
                                             << " dB to the F32 decoder");
  CHECK(snr_official >= 40.0);
  CHECK(same_bits(decode_frame_by_frame(int16, codes), pcm));
}

TEST_CASE("codec decoder int16: random weights at the real 12 Hz config within 40 dB of F32; streamed equals whole") {
  const CodecConfig config = codec_config_preset();
  auto set = loader::make_random_tensor_set("codec-12hz", backends::DType::F32, 11);
  auto backend = backends::make_cpu_backend(2);
  CodecDecoder f32 = CodecDecoder::load(*set, config, *backend, 4);
  CodecDecoder int16 = CodecDecoder::load(*set, config, *backend, 4, CodecPrecision::int16);
  std::vector<float> stage[2];
  auto keep = [&](std::vector<float>& out) {
    return [&backend, &out](std::string_view name, const backends::Tensor& t) {
      if (name != "decoder_1") return;
      out.resize(static_cast<size_t>(t.num_elements()));
      backend->download(t, std::as_writable_bytes(std::span<float>(out)));
    };
  };
  f32.set_stage_hook(keep(stage[0]));
  int16.set_stage_hook(keep(stage[1]));
  const std::vector<int32_t> codes = test::random_codes(config, 3, 5);
  f32.decode_all(codes);
  const std::vector<float> pcm = int16.decode_all(codes);
  const double snr = snr_db(stage[1], stage[0]);
  MESSAGE("int16 codec at the real config (random weights): decoder_1 SNR " << snr << " dB to the F32 decoder");
  CHECK(snr >= 40.0);
  int16.set_stage_hook(nullptr);
  CHECK(same_bits(decode_frame_by_frame(int16, codes), pcm));
}

TEST_CASE("codec decoder int16: a precision name other than f32 or int16 is refused") {
  CHECK(parse_codec_precision("f32") == CodecPrecision::f32);
  CHECK(parse_codec_precision("int16") == CodecPrecision::int16);
  CHECK_THROWS_AS(parse_codec_precision("bf16"), std::invalid_argument);
}

}  // namespace sluice::engine::tts
