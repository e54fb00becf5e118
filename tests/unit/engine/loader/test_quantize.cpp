// Quantization at load (loader/quantize.h): the same blocks as gguf-py's reference
// quantizer wrote into the fixtures' Q8_0 / Q4_0 GGUF files, byte for byte.
#include <doctest/doctest.h>

#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/loader/quantize.h"
#include "tests/unit/engine/models/model_fixture.h"

namespace sluice::engine::testing::unit_engine_loader_test_quantize {
namespace {

using backends::DType;

std::vector<std::byte> bytes_of(const std::vector<float>& values) {
  std::vector<std::byte> out(values.size() * sizeof(float));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TEST_CASE("quantize_matrix gives the fixture GGUFs' Q8_0 and Q4_0 blocks from their safetensors") {
  for (const std::string& name : kFixtureNames) {
    const ModelFixture fixture = load_fixture(name);
    const auto source = open_fixture_weights(fixture, "safetensors");
    for (const auto& [variant, dtype] : {std::pair{"q8_0", DType::Q8_0}, {"q4_0", DType::Q4_0}}) {
      const auto quantized = open_fixture_weights(fixture, variant);
      for (const std::string tensor : {"blk.0.ffn_gate.weight", "blk.1.ffn_down.weight", "blk.0.attn_v.weight",
                                       "token_embd.weight"}) {
        if (tensor == "token_embd.weight" && dtype == DType::Q4_0) continue;  // Q8_0 in both variants
        CAPTURE(name);
        CAPTURE(variant);
        CAPTURE(tensor);
        const auto view = source->find(tensor);
        const auto want = quantized->find(tensor);
        REQUIRE(view.has_value());
        REQUIRE(want.has_value());
        const DType to = tensor == "token_embd.weight" ? DType::Q8_0 : dtype;
        REQUIRE(want->dtype == to);
        const std::vector<std::byte> got =
            loader::quantize_matrix(view->dtype, view->data, view->shape[0], view->shape[1], to);
        REQUIRE(got.size() == want->data.size());
        CHECK(std::memcmp(got.data(), want->data.data(), got.size()) == 0);
      }
    }
  }
}

TEST_CASE("quantize_matrix: zero blocks, F16 and BF16 sources, and what it refuses") {
  std::vector<float> values(64, 0.0f);
  for (int i = 32; i < 64; ++i) values[i] = static_cast<float>(i - 48) / 8.0f;  // exact in F16 and BF16
  const std::vector<std::byte> f32 = bytes_of(values);
  const std::vector<std::byte> q8 = loader::quantize_matrix(DType::F32, f32, 1, 64, DType::Q8_0);
  REQUIRE(q8.size() == 2 * 34);
  for (int i = 0; i < 34; ++i) CHECK(q8[i] == std::byte{0});  // a zero block: d = 0, q = 0
  const std::vector<std::byte> q4 = loader::quantize_matrix(DType::F32, f32, 1, 64, DType::Q4_0);
  REQUIRE(q4.size() == 2 * 18);
  uint16_t zero_d = 0;  // 0 / -8: F16 -0.0 (as gguf-py writes it)
  std::memcpy(&zero_d, q4.data(), 2);
  CHECK((zero_d & 0x7FFF) == 0);
  for (int i = 2; i < 18; ++i) CHECK(q4[i] == std::byte{0x88});  // q = 8 is zero
  // The largest magnitude is -2 (x = -16/8): d = 2 / 8 = 0.25, F16 0x3400; -2 -> q 0.
  uint16_t d = 0;
  std::memcpy(&d, q4.data() + 18, 2);
  CHECK(d == 0x3400);
  CHECK((std::to_integer<int>(q4[20]) & 0xF) == 0);

  // F16 and BF16 rows quantize as their F32 values do.
  std::vector<std::byte> f16(64 * 2), bf16(64 * 2);
  for (int i = 0; i < 64; ++i) {
    const auto bits = std::bit_cast<uint32_t>(values[i]);
    const auto b = static_cast<uint16_t>(bits >> 16);
    std::memcpy(bf16.data() + 2 * i, &b, 2);
    // Exact in F16: sign, rebiased exponent, top mantissa bits (zero stays zero).
    const uint16_t h = values[i] == 0.0f ? uint16_t{0}
                                         : static_cast<uint16_t>(((bits >> 16) & 0x8000u) |
                                                                 ((((bits >> 23) & 0xFFu) - 112u) << 10) |
                                                                 ((bits >> 13) & 0x3FFu));
    std::memcpy(f16.data() + 2 * i, &h, 2);
  }
  CHECK(loader::quantize_matrix(DType::BF16, bf16, 1, 64, DType::Q8_0) == q8);
  CHECK(loader::quantize_matrix(DType::F16, f16, 1, 64, DType::Q8_0) == q8);

  CHECK_FALSE(loader::can_quantize(DType::F32, 48));  // not whole blocks
  CHECK_FALSE(loader::can_quantize(DType::Q8_0, 64));
  CHECK_THROWS_AS(loader::quantize_matrix(DType::F32, f32, 1, 64, DType::Q4_K), std::invalid_argument);
  CHECK(loader::parse_load_quantization("none") == std::nullopt);
  CHECK(loader::parse_load_quantization("q4_0") == DType::Q4_0);
  CHECK_THROWS_WITH_AS(loader::parse_load_quantization("q5_k"), doctest::Contains("none, q8_0 or q4_0"),
                       std::invalid_argument);
}

}  // namespace
}  // namespace sluice::engine::testing
