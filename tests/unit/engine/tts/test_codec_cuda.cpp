// The codec decoder on CUDA against the CPU: the same random weights and codes,
// decoded whole, frame by frame, and as three streams together. Tolerance: max
// |cuda - cpu| <= 1e-3 on samples in [-1, 1]; the ops differ only in accumulation
// order (~1e-6 per stage, see tests/unit/backends/cuda/cuda_parity_util.h), a wrong
// kernel is off by far more.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/tts/codec/codec_decoder.h"
#include "tests/unit/backends/backend_test_util.h"
#include "tests/unit/engine/tts/codec_test_util.h"
#include "engine/synthetic/random_tensor_set.h"

namespace sluice::engine::tts::unit_engine_tts_test_codec_cuda {

TEST_CASE("codec decoder: CUDA decodes like the CPU, whole, streamed and several streams together") {
  auto gpu = backends::test::cuda_backend_or_skip("codec decoder CUDA parity");
  if (!gpu) return;
  auto cpu = backends::make_cpu_backend(2);
  const CodecConfig config = test::small_codec_config();
  auto set = loader::make_random_tensor_set("codec", backends::DType::F32, 7);
  CodecDecoder on_cpu = CodecDecoder::load(*set, config, *cpu, 4);
  CodecDecoder on_gpu = CodecDecoder::load(*set, config, *gpu, 4);
  const std::vector<int32_t> codes = test::random_codes(config, 30, 5);
  const std::vector<float> want = on_cpu.decode_all(codes);
  const std::vector<float> got = on_gpu.decode_all(codes);
  CodecStream stream = on_gpu.start();
  std::vector<float> streamed;
  const auto q = static_cast<size_t>(config.num_quantizers);
  for (size_t f = 0; f < codes.size(); f += q) stream.decode(std::span<const int32_t>(codes).subspan(f, q), streamed);
  REQUIRE(got.size() == want.size());
  REQUIRE(streamed.size() == want.size());
  double max_err = 0.0, max_stream = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_err = std::max(max_err, std::abs(double(got[i]) - want[i]));
    max_stream = std::max(max_stream, std::abs(double(streamed[i]) - want[i]));
  }
  MESSAGE("codec CUDA vs CPU: whole " << max_err << ", streamed " << max_stream);
  CHECK(max_err <= 1e-3);
  CHECK(max_stream <= 1e-3);

  // Three streams decoded together on the GPU (decode_together: stacked conv inputs,
  // one KV ring per stream), two frames a piece: each as the CPU decodes it alone.
  std::vector<std::vector<int32_t>> voice_codes;
  std::vector<CodecStream> streams;
  std::vector<std::vector<float>> together(3);
  for (uint32_t i = 0; i < 3; ++i) {
    voice_codes.push_back(test::random_codes(config, 12, 40 + i));
    streams.push_back(on_gpu.start());
  }
  for (size_t f = 0; f < 12; f += 2) {
    std::vector<CodecPiece> pieces;
    for (size_t i = 0; i < 3; ++i)
      pieces.push_back({&streams[i], std::span<const int32_t>(voice_codes[i]).subspan(f * q, 2 * q), &together[i]});
    on_gpu.decode_together(pieces);
  }
  for (size_t i = 0; i < 3; ++i) {
    const std::vector<float> alone = on_cpu.decode_all(voice_codes[i]);
    REQUIRE(together[i].size() == alone.size());
    double max_together = 0.0;
    for (size_t j = 0; j < alone.size(); ++j) max_together = std::max(max_together, std::abs(double(together[i][j]) - alone[j]));
    MESSAGE("codec CUDA, stream " << i << " decoded together vs the CPU alone: " << max_together);
    CHECK(max_together <= 1e-3);
  }
}

}  // namespace sluice::engine::tts
