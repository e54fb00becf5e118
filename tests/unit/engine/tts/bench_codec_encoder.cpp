// Speed of cloning a voice on the CPU (2 threads) and on CUDA: a 10 s reference at
// the real shapes (random weights): the speaker encoder (the 0.6B's 1024-wide
// x-vector) and the codec encoder per stage, and in the same run the codec decoder's
// ms per frame in 4-frame pieces (docs/speech.md's figure), so a run on a busy machine
// can be scaled to an idle one. A benchmark, not a test: skipped unless asked for,
//   ./build/tests/sluice_unit_tests -tc='codec encoder bench*' --no-skip
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <string>

#include "engine/synthetic/random_tensor_set.h"
#include "engine/tts/codec/codec_decoder.h"
#include "engine/tts/codec/codec_encoder.h"
#include "engine/tts/speaker/speaker_encoder.h"
#include "tests/unit/backends/backend_test_util.h"
#include "tests/unit/engine/tts/codec_encoder_test_util.h"
#include "tests/unit/engine/tts/codec_test_util.h"

namespace sluice::engine::tts::unit_engine_tts_bench_codec_encoder {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

double decoder_ms_per_frame(CodecDecoder& decoder, const std::vector<int32_t>& codes) {
  const size_t piece = 4 * static_cast<size_t>(decoder.config().num_quantizers);
  CodecStream stream = decoder.start();
  std::vector<float> pcm;
  const Clock::time_point start = Clock::now();
  for (size_t f = 0; f < codes.size(); f += piece)
    stream.decode(std::span<const int32_t>(codes).subspan(f, std::min(piece, codes.size() - f)), pcm);
  return ms_since(start) / static_cast<double>(codes.size() / static_cast<size_t>(decoder.config().num_quantizers));
}

// A 10 s reference at the real shapes on `backend`: the speaker encoder's x-vector
// and the codec encoder's codes (what cloning a voice computes), per stage, and the
// codec decoder's ms per frame in the same run.
void bench_cloning(backends::Backend& backend, const std::string& label) {
  auto encoder_set = loader::make_random_tensor_set("codec-12hz", backends::DType::F32, 12);
  CodecEncoder encoder = CodecEncoder::load(*encoder_set, codec_encoder_config_preset(), backend);
  auto decoder_set = loader::make_random_tensor_set("codec-12hz", backends::DType::F32, 11);
  CodecDecoder decoder = CodecDecoder::load(*decoder_set, codec_config_preset(), backend);
  auto speaker_set = loader::make_random_tensor_set("speaker-encoder", backends::DType::F32, 13);
  const SpeakerEncoder speaker(*speaker_set, SpeakerEncoderConfig{}, backend);
  const std::vector<float> clip = test::test_signal(240000, 7);
  const std::vector<int32_t> codes = test::random_codes(decoder.config(), 40, 9);
  // Warm up: first touches of the weights and scratch.
  encoder.encode(std::span<const float>(clip).first(24000));
  speaker.embed(std::span<const float>(clip).first(24000));
  decoder_ms_per_frame(decoder, codes);

  std::string stages;
  Clock::time_point mark;
  encoder.set_stage_hook([&](std::string_view name, const backends::Tensor&) {
    stages += " " + std::string(name) + " " + std::to_string(static_cast<int>(ms_since(mark))) + " ms,";
    mark = Clock::now();
  });
  for (int round = 0; round < 2; ++round) {
    const double decoder_ms = decoder_ms_per_frame(decoder, codes);
    Clock::time_point start = Clock::now();
    const std::vector<float> xvector = speaker.embed(clip);
    const double speaker_ms = ms_since(start);
    REQUIRE(xvector.size() == 1024u);
    stages.clear();
    start = Clock::now();
    mark = start;
    const std::vector<int32_t> got = encoder.encode(clip);
    const double encode_ms = ms_since(start);
    REQUIRE(got.size() == 125u * 16u);
    MESSAGE(label << ", 10 s reference: speaker encoder " << speaker_ms << " ms; codec encoder " << encode_ms
                  << " ms (" << stages << " quantize " << static_cast<int>(ms_since(mark))
                  << " ms); codec decoder in the same run: " << decoder_ms << " ms/frame in 4-frame pieces");
  }
}

}  // namespace

TEST_CASE("codec encoder bench: a 10 s reference at the real shapes on the CPU" * doctest::skip()) {
  auto backend = backends::make_cpu_backend(2);
  bench_cloning(*backend, "CPU, 2 threads");
}

TEST_CASE("codec encoder bench: a 10 s reference at the real shapes on CUDA" * doctest::skip()) {
  auto gpu = backends::test::cuda_backend_or_skip("cloning bench on CUDA");
  if (!gpu) return;
  bench_cloning(*gpu, "CUDA");
}

}  // namespace sluice::engine::tts
