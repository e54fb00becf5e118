// Parity of the codec decoder with the official one (qwen-tts 0.1.1) on the tiny
// fixture tests/fixtures/qwen3_tts (make_fixtures.py): 12 frames of fixed codes,
// the official waveform and its intermediate activations ([channels, time] each).
//
// Tolerance: waveform max |ours - official| <= 1e-4 and SNR >= 80 dB; every stage
// max |error| <= 1e-4 * max(1, max |official|). Both run in F32 but sum in other
// orders (the RVQ projection folded into the tables, LayerScale and ConvNeXt gamma
// folded into the weights, other matmul and conv accumulation orders), which
// costs ~1e-6 relative per stage; a wrong tap order, padding, window or RoPE
// pairing is off by 1e-2 or more.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tts/codec/codec_decoder.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::tts::unit_engine_tts_test_codec_parity {
namespace {

const std::filesystem::path kFixture = std::filesystem::path(SLUICE_FIXTURES_DIR) / "qwen3_tts";

std::vector<float> read_f32(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

TEST_CASE("codec decoder: parity with the official decoder on the tiny fixture (waveform and stages)") {
  const std::filesystem::path golden = kFixture / "codec_golden";
  if (!testing::has_model_file(golden / "codes.json", "codec parity",
                               "tests/fixtures/qwen3_tts/make_fixtures.py (branch tts-fixtures)"))
    return;
  const nlohmann::json meta = nlohmann::json::parse(std::ifstream(golden / "codes.json"));
  std::vector<int32_t> codes;
  for (const auto& frame : meta.at("codes"))
    for (const auto& code : frame) codes.push_back(code.get<int32_t>());
  const int64_t frames = meta.at("frames").get<int64_t>();

  const CodecConfig config = read_codec_config(kFixture / "speech_tokenizer" / "config.json");
  auto set = loader::open_tensor_set(kFixture / "speech_tokenizer");
  auto backend = backends::make_cpu_backend(2);
  CodecDecoder decoder = CodecDecoder::load(*set, config, *backend, frames);

  // Each stage as the official [channels, time] layout.
  std::map<std::string, std::vector<float>, std::less<>> stages;
  decoder.set_stage_hook([&](std::string_view name, const backends::Tensor& t) {
    std::vector<float> rows(static_cast<size_t>(t.num_elements()));
    backend->download(t, std::as_writable_bytes(std::span<float>(rows)));
    const int64_t time = t.dim(0), channels = t.dim(1);
    std::vector<float>& out = stages[std::string(name)];
    out.resize(rows.size());
    for (int64_t i = 0; i < time; ++i)
      for (int64_t ch = 0; ch < channels; ++ch) out[ch * time + i] = rows[i * channels + ch];
  });
  const std::vector<float> pcm = decoder.decode_all(codes);

  for (const char* name : {"rvq_dequant", "pre_conv", "pre_transformer", "upsample", "decoder_0", "decoder_1"}) {
    CAPTURE(name);
    const std::string key = std::string(name) == "rvq_dequant" ? "rvq" : name;
    const std::vector<float> want = read_f32(golden / (std::string(name) + ".bin"));
    const std::vector<float>& got = stages[key];
    REQUIRE(got.size() == want.size());
    double max_ref = 1.0, max_err = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
      max_ref = std::max(max_ref, std::abs(double(want[i])));
      max_err = std::max(max_err, std::abs(double(got[i]) - want[i]));
    }
    MESSAGE(std::string(name) << ": max error " << max_err << " (max |official| " << max_ref << ")");
    CHECK(max_err <= 1e-4 * max_ref);
  }

  const std::vector<float> want = read_f32(golden / "waveform.bin");
  REQUIRE(pcm.size() == want.size());
  double err = 0.0, signal = 0.0, max_err = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = double(pcm[i]) - want[i];
    err += e * e;
    signal += double(want[i]) * want[i];
    max_err = std::max(max_err, std::abs(e));
  }
  const double snr = 10.0 * std::log10(signal / std::max(err, 1e-30));
  MESSAGE("waveform: max error " << max_err << ", SNR " << snr << " dB");
  CHECK(max_err <= 1e-4);
  CHECK(snr >= 80.0);

  // Streaming frame by frame gives the same bits as the whole pass.
  decoder.set_stage_hook(nullptr);
  CodecStream stream = decoder.start();
  std::vector<float> streamed;
  for (int64_t t = 0; t < frames; ++t)
    stream.decode(std::span<const int32_t>(codes).subspan(static_cast<size_t>(t * config.num_quantizers),
                                                        static_cast<size_t>(config.num_quantizers)),
                  streamed);
  CHECK(std::memcmp(streamed.data(), pcm.data(), pcm.size() * sizeof(float)) == 0);
}

}  // namespace sluice::engine::tts
