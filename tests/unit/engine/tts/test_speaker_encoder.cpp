// The Base checkpoints' speaker encoder against the official qwen-tts package on
// the tiny base_small fixture (tests/fixtures/qwen3_tts/speaker_golden, made by
// make_fixtures.py from two synthetic voice clips): the log-mel front-end, the
// ECAPA-TDNN on the official log-mels alone, and the whole x-vector from the audio.
// Tolerances (measured errors are printed):
//   - log-mels: |ours - official| <= 1e-3 absolute (log units; values span about
//     -11.5 .. 3): a DFT by F32 dot products where PyTorch runs an FFT, then the
//     mel matmul; bins near the 1e-5 floor amplify absolute errors of ~1e-7;
//   - x-vector from the official log-mels, and from the audio: 1e-5 of its largest
//     magnitude (F32 convolutions in another summation order; the log-mel
//     differences barely move it: measured ~3e-7 for both).
// Then the same on CUDA against the CPU (skipped without a device).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>

#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "engine/loader/tensor_set.h"
#include "engine/tts/model/tts_config.h"
#include "engine/tts/speaker/mel_tables.h"
#include "engine/tts/speaker/speaker_encoder.h"
#include "tests/unit/backends/backend_test_util.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::tts::unit_engine_tts_test_speaker_encoder {
namespace {

namespace fs = std::filesystem;

const fs::path kFixtures = fs::path(SLUICE_FIXTURES_DIR) / "qwen3_tts";
const fs::path kGolden = kFixtures / "speaker_golden";
constexpr double kMelTolerance = 1e-3;
constexpr double kNetworkTolerance = 1e-5;
constexpr double kXvectorTolerance = 1e-5;
const char* const kReferences[] = {"voice_24k", "voice_16k_stereo"};

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in, "cannot open " << path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

double max_abs_error(std::span<const float> got, std::span<const float> want) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::abs(double(got[i]) - want[i]));
  return worst;
}

double relative_error(std::span<const float> got, std::span<const float> want) {
  double scale = 1e-30;
  for (float v : want) scale = std::max(scale, std::abs(double(v)));
  return max_abs_error(got, want) / scale;
}

struct Fixture {
  TtsConfig config = read_tts_config(kFixtures / "base_small");
  std::unique_ptr<loader::TensorSet> tensors = loader::open_tensor_set(kFixtures / "base_small");
};

}  // namespace

TEST_CASE("mel tables: the filterbank's triangles and the DFT basis's bins") {
  const MelSpec spec;
  const std::vector<float> bank = slaney_mel_filterbank(spec);
  REQUIRE(bank.size() == static_cast<size_t>(spec.num_mels * spec.num_bins()));
  // Every filter is a single non-negative bump, the bumps move up in frequency, and
  // the Slaney normalization makes the low (narrow, linear-scale) filters tallest.
  int64_t last_peak = -1;
  std::vector<float> heights;
  for (int64_t m = 0; m < spec.num_mels; ++m) {
    const float* row = bank.data() + m * spec.num_bins();
    int64_t peak = 0, sign_changes = 0;
    for (int64_t b = 0; b < spec.num_bins(); ++b) {
      CHECK(row[b] >= 0.0f);
      if (row[b] > row[peak]) peak = b;
      if (b > 0 && (row[b] > 0.0f) != (row[b - 1] > 0.0f)) ++sign_changes;
    }
    CHECK(sign_changes <= 2);
    CHECK(peak >= last_peak);
    last_peak = peak;
    heights.push_back(row[peak]);
  }
  CHECK(heights[2] > 3 * heights[120]);

  // A cosine at bin 37 through the basis: the real part peaks at 37, the rest ~0.
  const std::vector<float> basis = dft_basis(spec);
  std::vector<double> power(static_cast<size_t>(spec.num_bins()));
  for (int64_t k = 0; k < spec.num_bins(); ++k) {
    double re = 0, im = 0;
    for (int64_t n = 0; n < spec.n_fft; ++n) {
      const double x = std::cos(2 * std::numbers::pi * 37.0 * double(n) / double(spec.n_fft));
      re += basis[static_cast<size_t>(k * spec.n_fft + n)] * x;
      im += basis[static_cast<size_t>((spec.num_bins() + k) * spec.n_fft + n)] * x;
    }
    power[static_cast<size_t>(k)] = re * re + im * im;
  }
  CHECK(std::max_element(power.begin(), power.end()) - power.begin() == 37);
  // The Hann window leaks into the two neighbours only.
  CHECK(power[30] < 1e-6 * power[37]);
}

TEST_CASE("speaker encoder: log-mels and x-vectors of the reference clips match the official package") {
  Fixture f;
  REQUIRE(f.config.speaker_encoder.has_value());
  auto backend = backends::make_reference_cpu_backend(2);
  const SpeakerEncoder encoder(*f.tensors, *f.config.speaker_encoder, *backend);
  const auto golden = nlohmann::json::parse(std::ifstream(kGolden / "speaker.json"));
  for (const char* name : kReferences) {
    CAPTURE(name);
    const std::vector<float> samples = read_floats(kGolden / (std::string(name) + ".samples.bin"));
    const std::vector<float> want_mels = read_floats(kGolden / (std::string(name) + ".mels.bin"));
    const std::vector<float> want = read_floats(kGolden / (std::string(name) + ".xvector.bin"));
    const int64_t frames = golden["references"][name]["frames"].get<int64_t>();
    REQUIRE(!encoder.check_length(static_cast<int64_t>(samples.size())));

    const std::vector<float> mels = encoder.mels(samples);
    const double mel_error = max_abs_error(mels, want_mels);
    const double network_error = relative_error(encoder.embed_mels(want_mels, frames), want);
    const double xvector_error = relative_error(encoder.embed(samples), want);
    MESSAGE(std::string(name) << ": " << frames << " frames; log-mel max error " << mel_error << ", x-vector from official mels "
                 << network_error << ", from audio " << xvector_error << " (relative to max |x|)");
    CHECK(mel_error <= kMelTolerance);
    CHECK(network_error <= kNetworkTolerance);
    CHECK(xvector_error <= kXvectorTolerance);
  }
}

TEST_CASE("speaker encoder: audio too short for the reflect padding is refused with the reason") {
  Fixture f;
  auto backend = backends::make_cpu_backend(1);
  const SpeakerEncoder encoder(*f.tensors, *f.config.speaker_encoder, *backend);
  // 384 samples of padding need more than 384 samples; the widest dilated conv
  // pads 4 rows after each frame, so 5 frames: (n + 768 - 1024) / 256 + 1 >= 5.
  const auto too_short = encoder.check_length(384);
  REQUIRE(too_short.has_value());
  CHECK(too_short->find("384") != std::string::npos);
  const auto few_frames = encoder.check_length(1279);
  REQUIRE(few_frames.has_value());
  CHECK(few_frames->find("4 mel frames") != std::string::npos);
  CHECK_FALSE(encoder.check_length(1280).has_value());
  std::vector<float> shortest(1280);
  for (size_t i = 0; i < shortest.size(); ++i) shortest[i] = 0.3f * static_cast<float>(std::sin(0.05 * double(i)));
  const std::vector<float> x = encoder.embed(shortest);
  CHECK(x.size() == 32);
  for (float v : x) CHECK(std::isfinite(v));
}

TEST_CASE("speaker encoder: CUDA computes the CPU's log-mels and x-vector") {
  auto gpu = backends::test::cuda_backend_or_skip("speaker encoder CUDA parity");
  if (!gpu) return;
  Fixture f;
  auto cpu = backends::make_reference_cpu_backend(2);
  const SpeakerEncoder on_cpu(*f.tensors, *f.config.speaker_encoder, *cpu);
  const SpeakerEncoder on_gpu(*f.tensors, *f.config.speaker_encoder, *gpu);
  for (const char* name : kReferences) {
    CAPTURE(name);
    const std::vector<float> samples = read_floats(kGolden / (std::string(name) + ".samples.bin"));
    const double mel_error = max_abs_error(on_gpu.mels(samples), on_cpu.mels(samples));
    const double xvector_error = relative_error(on_gpu.embed(samples), on_cpu.embed(samples));
    MESSAGE(std::string(name) << " CUDA vs CPU: log-mels " << mel_error << ", x-vector " << xvector_error);
    CHECK(mel_error <= kMelTolerance);
    CHECK(xvector_error <= kXvectorTolerance);
  }
}

}  // namespace sluice::engine::tts
