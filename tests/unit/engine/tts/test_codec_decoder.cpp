#include "engine/tts/codec/codec_decoder.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/loader/load_error.h"
#include "tests/unit/engine/tts/codec_test_util.h"
#include "engine/synthetic/random_tensor_set.h"

namespace sluice::engine::tts::unit_engine_tts_test_codec_decoder {
namespace {

using backends::DType;
using test::random_codes;
using test::small_codec_config;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Decodes `codes` on a fresh stream in pieces of the given frame counts, cycling.
std::vector<float> decode_in_pieces(CodecDecoder& decoder, const std::vector<int32_t>& codes,
                                    const std::vector<int64_t>& pieces) {
  const auto q = static_cast<size_t>(decoder.config().num_quantizers);
  CodecStream stream = decoder.start();
  std::vector<float> pcm;
  size_t begin = 0;
  for (size_t i = 0; begin < codes.size(); ++i) {
    const size_t count = std::min(static_cast<size_t>(pieces[i % pieces.size()]) * q, codes.size() - begin);
    stream.decode(std::span<const int32_t>(codes).subspan(begin, count), pcm);
    begin += count;
  }
  return pcm;
}

}  // namespace

TEST_CASE("codec decoder: streaming in any pieces equals decode_all bit for bit on the CPU") {
  const CodecConfig config = small_codec_config();
  auto set = loader::make_random_tensor_set("codec", DType::F32, 7);
  auto backend = backends::make_cpu_backend(2);
  const std::vector<int32_t> codes = random_codes(config, 70, 1);
  // One pass: a 70-frame chunk, a KV ring of 80 slots that never wraps.
  CodecDecoder one_pass = CodecDecoder::load(*set, config, *backend, 70);
  const std::vector<float> whole = one_pass.decode_all(codes);
  REQUIRE(whole.size() == 70u * 24u);
  bool any_nonzero = false;
  for (float v : whole) {
    REQUIRE(std::isfinite(v));
    REQUIRE(std::abs(v) <= 1.0f);
    any_nonzero = any_nonzero || v != 0.0f;
  }
  CHECK(any_nonzero);

  // Chunk limits of 4 and 13 frames split the bigger pieces inside the stream too,
  // and with the 5-frame window the ring is one block (8 live positions) and two
  // blocks (17 live: one more than a block), recycled many times over 70 frames.
  for (int64_t max_chunk : {4, 13}) {
    CAPTURE(max_chunk);
    CodecDecoder decoder = CodecDecoder::load(*set, config, *backend, max_chunk);
    CHECK(same_bits(decoder.decode_all(codes), whole));
    CHECK(same_bits(decode_in_pieces(decoder, codes, {1}), whole));
    CHECK(same_bits(decode_in_pieces(decoder, codes, {1, 2, 5, 3}), whole));
    CHECK(same_bits(decode_in_pieces(decoder, codes, {7, 1, 13}), whole));
  }
}

TEST_CASE("codec decoder: streams decoded together each get their own samples, bit for bit on the CPU") {
  const CodecConfig config = small_codec_config();
  auto set = loader::make_random_tensor_set("codec", DType::F32, 7);
  auto backend = backends::make_cpu_backend(2);
  const auto q = static_cast<size_t>(config.num_quantizers);
  // 13-frame steps: pieces are split across steps and steps hold pieces of several
  // streams; 11 streams exceed the streams a step takes, so some go to a second step.
  CodecDecoder decoder = CodecDecoder::load(*set, config, *backend, 13);
  constexpr size_t kStreams = 11;
  constexpr int64_t kFrames = 30;
  std::vector<std::vector<int32_t>> codes;
  std::vector<std::vector<float>> alone;
  for (size_t i = 0; i < kStreams; ++i) {
    codes.push_back(random_codes(config, kFrames, static_cast<uint32_t>(100 + i)));
    alone.push_back(decoder.decode_all(codes.back()));
  }
  std::vector<CodecStream> streams;
  for (size_t i = 0; i < kStreams; ++i) streams.push_back(decoder.start());
  std::vector<std::vector<float>> together(kStreams);
  std::vector<size_t> sent(kStreams, 0);  // frames handed over so far
  for (size_t round = 0; std::ranges::any_of(sent, [](size_t f) { return f < kFrames; }); ++round) {
    std::vector<CodecPiece> pieces;
    for (size_t i = 0; i < kStreams; ++i) {
      // Stream i starts in round i (its position differs from the others') and then
      // takes 1 to 6 frames a round, skipping every third round.
      if (round < i || (round + i) % 3 == 0) continue;
      const size_t frames = std::min<size_t>(1 + (round * 7 + i * 3) % 6, static_cast<size_t>(kFrames) - sent[i]);
      if (frames == 0) continue;
      pieces.push_back({&streams[i], std::span<const int32_t>(codes[i]).subspan(sent[i] * q, frames * q), &together[i]});
      sent[i] += frames;
    }
    decoder.decode_together(pieces);
  }
  for (size_t i = 0; i < kStreams; ++i) {
    CAPTURE(i);
    CHECK(streams[i].num_frames() == kFrames);
    CHECK(same_bits(together[i], alone[i]));
  }
}

TEST_CASE("codec decoder: a bad piece among streams decoded together changes no stream") {
  const CodecConfig config = small_codec_config();
  auto set = loader::make_random_tensor_set("codec", DType::F32, 7);
  auto backend = backends::make_cpu_backend(1);
  CodecDecoder decoder = CodecDecoder::load(*set, config, *backend, 8);
  const std::vector<int32_t> good = random_codes(config, 3, 4);
  std::vector<int32_t> bad = good;
  bad.back() = 32;
  CodecStream a = decoder.start(), b = decoder.start();
  std::vector<float> pcm_a, pcm_b;
  const CodecPiece pieces[] = {{&a, good, &pcm_a}, {&b, bad, &pcm_b}};
  CHECK_THROWS_AS(decoder.decode_together(pieces), std::invalid_argument);
  CHECK(a.num_frames() == 0);
  CHECK(b.num_frames() == 0);
  CHECK(pcm_a.empty());
  CHECK(pcm_b.empty());
}

TEST_CASE("codec decoder: a stream carries its context (later frames depend on earlier ones)") {
  const CodecConfig config = small_codec_config();
  auto set = loader::make_random_tensor_set("codec", DType::F32, 7);
  auto backend = backends::make_cpu_backend(2);
  CodecDecoder decoder = CodecDecoder::load(*set, config, *backend, 8);
  const std::vector<int32_t> codes = random_codes(config, 10, 2);
  const std::vector<float> whole = decoder.decode_all(codes);
  // The last 5 frames decoded on a fresh stream differ from the same frames in context.
  const std::vector<int32_t> tail(codes.begin() + 5 * 4, codes.end());
  const std::vector<float> alone = decoder.decode_all(tail);
  const std::vector<float> in_context(whole.begin() + 5 * 24, whole.end());
  CHECK_FALSE(same_bits(alone, in_context));
}

TEST_CASE("codec decoder: codes out of range or not whole frames are rejected before any kernel") {
  const CodecConfig config = small_codec_config();
  auto set = loader::make_random_tensor_set("codec", DType::F32, 7);
  auto backend = backends::make_cpu_backend(1);
  CodecDecoder decoder = CodecDecoder::load(*set, config, *backend, 4);
  std::vector<int32_t> codes = random_codes(config, 3, 3);
  const std::vector<float> expected = decoder.decode_all(codes);

  CodecStream stream = decoder.start();
  std::vector<float> pcm;
  std::vector<int32_t> bad = codes;
  bad[6] = 32;  // frame 1, codebook 2
  CHECK_THROWS_WITH_AS(stream.decode(bad, pcm), "codec codes: frame 1 codebook 2 has code 32 outside [0, 32)",
                       std::invalid_argument);
  bad[6] = -1;
  CHECK_THROWS_AS(stream.decode(bad, pcm), std::invalid_argument);
  CHECK_THROWS_AS(stream.decode(std::span<const int32_t>(codes).first(5), pcm), std::invalid_argument);
  CHECK(pcm.empty());
  CHECK(stream.num_frames() == 0);
  // The stream is untouched: it still decodes the good codes exactly.
  stream.decode(codes, pcm);
  CHECK(same_bits(pcm, expected));
}

TEST_CASE("codec decoder: load errors name the file and the tensor") {
  const CodecConfig config = small_codec_config();
  auto random = loader::make_random_tensor_set("codec", DType::F32, 7);
  auto backend = backends::make_cpu_backend(1);
  const std::filesystem::path file = "speech_tokenizer/model.safetensors";
  auto error_of = [&](const std::string& missing, const std::string& reshaped) -> std::string {
    test::TamperedTensorSet set(*random, missing, reshaped, file);
    try {
      CodecDecoder::load(set, config, *backend);
    } catch (const loader::LoadError& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of("decoder.pre_transformer.layers.1.mlp.down_proj.weight", "") ==
        "speech_tokenizer/model.safetensors: tensor 'decoder.pre_transformer.layers.1.mlp.down_proj.weight' is missing");
  CHECK(error_of("decoder.quantizer.rvq_rest.vq.layers.2._codebook.cluster_usage", "") ==
        "speech_tokenizer/model.safetensors: tensor "
        "'decoder.quantizer.rvq_rest.vq.layers.2._codebook.cluster_usage' is missing");
  CHECK(error_of("", "decoder.decoder.2.block.1.conv.weight") ==
        "speech_tokenizer/model.safetensors: tensor 'decoder.decoder.2.block.1.conv.weight' has shape "
        "[1, 16, 8, 4] where [16, 8, 4] is expected");
  CHECK(error_of("", "decoder.decoder.3.alpha") ==
        "speech_tokenizer/model.safetensors: tensor 'decoder.decoder.3.alpha' has shape [1, 8] where [8] is expected");
  CHECK(error_of("decoder.decoder.4.conv.bias", "").find("'decoder.decoder.4.conv.bias' is missing") !=
        std::string::npos);
}

TEST_CASE("codec decoder: random weights at the real 12 Hz config decode one frame to finite samples") {
  const CodecConfig config = codec_config_preset();
  auto set = loader::make_random_tensor_set("codec-12hz", DType::F32, 11);
  auto backend = backends::make_cpu_backend(2);
  CodecDecoder decoder = CodecDecoder::load(*set, config, *backend, 2);
  const std::vector<float> pcm = decoder.decode_all(random_codes(config, 1, 4));
  REQUIRE(pcm.size() == 1920u);
  int nonzero = 0;
  for (float v : pcm) {
    REQUIRE(std::isfinite(v));
    REQUIRE(std::abs(v) <= 1.0f);
    nonzero += v != 0.0f;
  }
  CHECK(nonzero > 0);
}

}  // namespace sluice::engine::tts
