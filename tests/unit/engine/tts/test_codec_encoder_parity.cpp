// Parity of the codec encoder with the official one (qwen-tts 0.1.1 on transformers
// 4.57.3's Mimi) on the tiny fixture tests/fixtures/qwen3_tts/codec_encoder
// (codec_encoder_fixtures.py): a synthesized 25000-sample clip, the official codes
// [14, 16] and the intermediate activations ([channels, time] each).
//
// Codes: identical. Every nearest-row decision of the official run has a relative
// gap (d2 - d1) / d1 of at least 1e-3 (codes.json: min_relative_margin), ~100x
// what F32 summation-order differences move a distance. The same holds on CUDA
// (F32 throughout, cuBLAS never in TF32).
// Stages: max |error| <= 1e-4 * max(1, max |official|). Both run in F32 but sum in
// other orders (convs tap-major, LayerScale folded into weights); that costs ~1e-6
// relative per stage, where a wrong tap order, padding, window or RoPE pairing is
// off by 1e-2 or more.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tts/codec/codec_encoder.h"
#include "tests/unit/backends/backend_test_util.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::tts::unit_engine_tts_test_codec_encoder_parity {
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

// Encodes the fixture's clip on `backend` and compares codes and stages with the
// official run's.
void check_official_parity(backends::Backend& backend) {
  const std::filesystem::path golden = kFixture / "codec_encoder_golden";
  const nlohmann::json meta = nlohmann::json::parse(std::ifstream(golden / "codes.json"));
  std::vector<int32_t> want_codes;
  for (const auto& frame : meta.at("codes"))
    for (const auto& code : frame) want_codes.push_back(code.get<int32_t>());
  MESSAGE("official decisions: smallest relative margin " << meta.at("min_relative_margin").get<double>());

  const CodecEncoderConfig config = read_codec_encoder_config(kFixture / "codec_encoder" / "config.json");
  auto set = loader::open_tensor_set(kFixture / "codec_encoder");
  // Chunks of 2 SEANet frames: the clip crosses 14 chunk boundaries.
  CodecEncoder encoder = CodecEncoder::load(*set, config, backend, 1920);

  std::map<std::string, std::vector<float>, std::less<>> stages;
  encoder.set_stage_hook([&](std::string_view name, const backends::Tensor& t) {
    std::vector<float> rows(static_cast<size_t>(t.num_elements()));
    backend.download(t, std::as_writable_bytes(std::span<float>(rows)));
    const int64_t time = t.dim(0), channels = t.dim(1);
    std::vector<float>& out = stages[std::string(name)];
    out.resize(rows.size());
    for (int64_t i = 0; i < time; ++i)
      for (int64_t ch = 0; ch < channels; ++ch) out[ch * time + i] = rows[i * channels + ch];
  });
  const std::vector<float> clip = read_f32(golden / "clip.bin");
  REQUIRE(static_cast<int64_t>(clip.size()) == meta.at("clip_samples").get<int64_t>());
  const std::vector<int32_t> codes = encoder.encode(clip);

  for (const std::string name : {"seanet", "transformer", "downsample", "semantic_proj", "acoustic_proj"}) {
    CAPTURE(name);
    const std::vector<float> want = read_f32(golden / (name + ".bin"));
    const std::vector<float>& got = stages[name];
    REQUIRE(got.size() == want.size());
    double max_ref = 1.0, max_err = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
      max_ref = std::max(max_ref, std::abs(double(want[i])));
      max_err = std::max(max_err, std::abs(double(got[i]) - want[i]));
    }
    MESSAGE(name << ": max error " << max_err << " (max |official| " << max_ref << ")");
    CHECK(max_err <= 1e-4 * max_ref);
  }

  REQUIRE(codes.size() == want_codes.size());
  int64_t differing = 0;
  for (size_t i = 0; i < codes.size(); ++i) differing += codes[i] != want_codes[i];
  CHECK(differing == 0);
  CHECK(codes == want_codes);
}

bool has_golden() {
  return testing::has_model_file(kFixture / "codec_encoder_golden" / "codes.json", "codec encoder parity",
                                 "tests/fixtures/qwen3_tts/make_fixtures.py --only encoder");
}

}  // namespace

TEST_CASE("codec encoder: parity with the official encoder on the tiny fixture (codes and stages)") {
  if (!has_golden()) return;
  auto backend = backends::make_cpu_backend(2);
  check_official_parity(*backend);
}

TEST_CASE("codec encoder: CUDA gives the official codes and stages on the tiny fixture") {
  auto gpu = backends::test::cuda_backend_or_skip("codec encoder CUDA parity");
  if (!gpu || !has_golden()) return;
  check_official_parity(*gpu);
}

}  // namespace sluice::engine::tts
