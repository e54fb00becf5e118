// Decode speed of the codec decoder on the CPU (2 threads): ms per frame streaming
// frame by frame, in 4-frame pieces (the server's chunks), in 16-frame pieces (what
// four voices' chunks would be in one call, were the calls merged: its gain over
// 4-frame pieces bounds what merging could save) and in 50-frame pieces, on
// the tiny fixture and on random weights at the real 12 Hz shapes, with F32 and
// int16 convolutions side by side (twice each, alternating, for a noisy machine),
// four voices' 4-frame pieces decoded a call per voice and together, and what
// priming a 10 s ICL reference costs against cloning a primed stream.
// A benchmark, not a test: skipped unless asked for,
//   ./build/tests/sluice_unit_tests -tc='codec bench*' --no-skip
#include <doctest/doctest.h>

#include <chrono>

#include "engine/tts/codec/codec_decoder.h"
#include "tests/unit/engine/tts/codec_test_util.h"
#include "engine/synthetic/random_tensor_set.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::tts::unit_engine_tts_bench_codec_decoder {
namespace {

double ms_per_frame(CodecDecoder& decoder, const std::vector<int32_t>& codes, int64_t piece) {
  const auto q = static_cast<size_t>(decoder.config().num_quantizers);
  CodecStream stream = decoder.start();
  std::vector<float> pcm;
  const auto start = std::chrono::steady_clock::now();
  for (size_t f = 0; f < codes.size(); f += piece * q)
    stream.decode(std::span<const int32_t>(codes).subspan(f, std::min(piece * q, codes.size() - f)), pcm);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return ms / static_cast<double>(codes.size() / q);
}

void report(const char* what, CodecDecoder& decoder, int64_t frames) {
  const std::vector<int32_t> codes = test::random_codes(decoder.config(), frames, 9);
  // Warm up (first touches of the scratch and the weights) on a few frames.
  ms_per_frame(decoder, std::vector<int32_t>(codes.begin(), codes.begin() + 4 * decoder.config().num_quantizers), 4);
  MESSAGE(std::string(what) << ": " << ms_per_frame(decoder, codes, 1) << " ms/frame frame by frame, "
               << ms_per_frame(decoder, codes, 4) << " in 4-frame pieces, " << ms_per_frame(decoder, codes, 16)
               << " in 16-frame pieces, " << ms_per_frame(decoder, codes, 50)
               << " in 50-frame pieces (" << frames << " frames)");
}

// Four voices' 4-frame pieces, the server's chunks at four streams: one call per
// voice against one decode_together call for all four, ms per frame of audio.
void report_together(CodecDecoder& decoder, int64_t frames) {
  constexpr size_t kVoices = 4;
  constexpr size_t kPiece = 4;
  const auto q = static_cast<size_t>(decoder.config().num_quantizers);
  std::vector<std::vector<int32_t>> codes;
  for (size_t i = 0; i < kVoices; ++i) codes.push_back(test::random_codes(decoder.config(), frames, 20 + i));
  auto run = [&](bool together) {
    std::vector<CodecStream> streams;
    for (size_t i = 0; i < kVoices; ++i) streams.push_back(decoder.start());
    std::vector<std::vector<float>> pcm(kVoices);
    const auto start = std::chrono::steady_clock::now();
    for (size_t f = 0; f < static_cast<size_t>(frames); f += kPiece) {
      std::vector<CodecPiece> pieces;
      for (size_t i = 0; i < kVoices; ++i)
        pieces.push_back({&streams[i], std::span<const int32_t>(codes[i]).subspan(f * q, kPiece * q), &pcm[i]});
      if (together) {
        decoder.decode_together(pieces);
      } else {
        for (const CodecPiece& piece : pieces) decoder.decode_together({&piece, 1});
      }
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return ms / static_cast<double>(frames * kVoices);
  };
  const double apart1 = run(false), together1 = run(true), apart2 = run(false), together2 = run(true);
  MESSAGE("four voices, 4-frame pieces: " << apart1 << " / " << apart2 << " ms/frame a call per voice, " << together1
          << " / " << together2 << " decoded together (" << frames << " frames each)");
}

}  // namespace

TEST_CASE("codec bench: ms per frame on the CPU" * doctest::skip()) {
  auto backend = backends::make_cpu_backend(2);
  const std::filesystem::path fixture = std::filesystem::path(SLUICE_FIXTURES_DIR) / "qwen3_tts" / "speech_tokenizer";
  if (std::filesystem::exists(fixture / "model.safetensors")) {
    auto set = loader::open_tensor_set(fixture);
    CodecDecoder tiny = CodecDecoder::load(*set, read_codec_config(fixture / "config.json"), *backend);
    report("tiny fixture", tiny, 100);
  }
  auto set = loader::make_random_tensor_set("codec-12hz", backends::DType::F32, 11);
  CodecDecoder real = CodecDecoder::load(*set, codec_config_preset(), *backend);
  CodecDecoder real16 = CodecDecoder::load(*set, codec_config_preset(), *backend, CodecDecoder::kDefaultMaxChunkFrames,
                                           CodecPrecision::int16);
  report_together(real, 48);
  for (int round = 0; round < 2; ++round) {
    report("real shapes, random weights, f32", real, 50);
    report("real shapes, random weights, int16", real16, 50);
  }
  // An ICL voice's 10 s reference (125 frames) primed, against cloning the primed
  // stream (what primed_codec_cache.h does for the voice's later requests).
  const std::vector<int32_t> reference = test::random_codes(real.config(), 125, 5);
  const auto start = std::chrono::steady_clock::now();
  CodecStream primed = real.start();
  std::vector<float> dropped;
  primed.decode(reference, dropped);
  const auto decoded = std::chrono::steady_clock::now();
  CodecStream copy = primed.clone();
  const auto cloned = std::chrono::steady_clock::now();
  MESSAGE("10 s ICL reference, f32: primed in " << std::chrono::duration<double, std::milli>(decoded - start).count()
          << " ms; a clone of the primed stream in "
          << std::chrono::duration<double, std::milli>(cloned - decoded).count() << " ms (" << copy.bytes() / 1e6
          << " MB)");
}

}  // namespace sluice::engine::tts
