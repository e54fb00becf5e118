// F16/BF16 conversions and the block dequantizers on hand-made blocks.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/dequantize.h"
#include "backends/cpu/half.h"
#include "backends/cpu/quant_blocks.h"

namespace sluice::backends::cpu::unit_backends_cpu_test_half_dequant {
namespace {

bool is_nan_half(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0; }

}  // namespace

TEST_CASE("half: every F16 value widens exactly and narrows back to itself") {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = fp16_to_fp32(h);
    if (is_nan_half(h)) {
      CHECK(std::isnan(f));
      CHECK(is_nan_half(fp32_to_fp16(f)));
      continue;
    }
    // The value itself, from the definition: (-1)^s * 2^(e-15) * (1 + m/1024), or subnormal.
    const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
    double expect = e == 0 ? std::ldexp(m, -24) : e == 31 ? INFINITY : std::ldexp(1024 + m, e - 25);
    if (h & 0x8000) expect = -expect;
    REQUIRE(static_cast<double>(f) == expect);
    REQUIRE(fp32_to_fp16(f) == h);
  }
}

TEST_CASE("half: narrowing rounds to nearest, ties to even, at every midpoint") {
  // Between consecutive positive halves a < b the midpoint goes to the one with an
  // even mantissa, and one F32 ulp either side goes to the nearer one.
  for (uint16_t a = 0; a < 0x7BFF; ++a) {
    const uint16_t b = static_cast<uint16_t>(a + 1);
    const float mid = (fp16_to_fp32(a) + fp16_to_fp32(b)) * 0.5f;  // exact: one more bit
    REQUIRE(fp32_to_fp16(mid) == ((a & 1) == 0 ? a : b));
    REQUIRE(fp32_to_fp16(std::nextafter(mid, 0.0f)) == a);
    REQUIRE(fp32_to_fp16(std::nextafter(mid, INFINITY)) == b);
    REQUIRE(fp32_to_fp16(-mid) == static_cast<uint16_t>(0x8000 | ((a & 1) == 0 ? a : b)));
  }
  CHECK(fp32_to_fp16(65519.996f) == 0x7BFF);
  CHECK(fp32_to_fp16(65520.0f) == 0x7C00);
  CHECK(fp32_to_fp16(1e10f) == 0x7C00);
  CHECK(fp32_to_fp16(-INFINITY) == 0xFC00);
  CHECK(fp32_to_fp16(1e-10f) == 0x0000);
  CHECK(fp32_to_fp16(0.1f) == 0x2E66);
}

TEST_CASE("half: bfloat16 widening is exact and narrowing rounds to nearest even") {
  for (uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = bf16_to_fp32(h);
    if (std::isnan(f)) {
      CHECK(std::isnan(bf16_to_fp32(fp32_to_bf16(f))));
      continue;
    }
    REQUIRE(fp32_to_bf16(f) == h);
  }
  CHECK(fp32_to_bf16(std::bit_cast<float>(0x3F808000u)) == 0x3F80);  // tie, even below
  CHECK(fp32_to_bf16(std::bit_cast<float>(0x3F818000u)) == 0x3F82);  // tie, even above
  CHECK(fp32_to_bf16(std::bit_cast<float>(0x3F808001u)) == 0x3F81);
}

TEST_CASE("dequantize: hand-made Q8_0, Q4_0, Q4_1, Q5_0 blocks") {
  SUBCASE("Q8_0: x = d * q") {
    BlockQ8_0 b[2];
    for (int k = 0; k < 2; ++k) {
      b[k].d = fp32_to_fp16(k == 0 ? 0.5f : -0.125f);
      for (int j = 0; j < kQk; ++j) b[k].qs[j] = static_cast<int8_t>(j * 8 - 128 + k);
    }
    std::vector<float> y(64);
    dequantize_row(DType::Q8_0, b, y.data(), 64);
    for (int k = 0; k < 2; ++k)
      for (int j = 0; j < kQk; ++j)
        CHECK(y[static_cast<size_t>(k * kQk + j)] == (k == 0 ? 0.5f : -0.125f) * static_cast<float>(j * 8 - 128 + k));
  }
  SUBCASE("Q4_0 and Q4_1: quantize exactly representable values, get them back") {
    // Values on the grid d * (q - 8), resp. d * q + m, round-trip exactly.
    const float d = 0.25f, m = -1.5f;
    int q[kQk];
    for (int j = 0; j < kQk; ++j) q[j] = (j * 7 + 3) % 16;
    BlockQ4_0 b0{};
    BlockQ4_1 b1{};
    b0.d = fp32_to_fp16(d);
    b1.d = fp32_to_fp16(d);
    b1.m = fp32_to_fp16(m);
    for (int j = 0; j < kQk / 2; ++j) {
      b0.qs[j] = b1.qs[j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
    }
    std::vector<float> y0(kQk), y1(kQk);
    dequantize_row(DType::Q4_0, &b0, y0.data(), kQk);
    dequantize_row(DType::Q4_1, &b1, y1.data(), kQk);
    for (int j = 0; j < kQk; ++j) {
      CHECK(y0[static_cast<size_t>(j)] == d * static_cast<float>(q[j] - 8));
      CHECK(y1[static_cast<size_t>(j)] == d * static_cast<float>(q[j]) + m);
    }
  }
  SUBCASE("Q5_0: the fifth bit comes from the little-endian qh word") {
    BlockQ5_0 b{};
    b.d = fp32_to_fp16(1.0f);
    const uint32_t qh = 0xA5F0'0F5Au;
    std::memcpy(b.qh, &qh, 4);
    for (int j = 0; j < kQk / 2; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    std::vector<float> y(kQk);
    dequantize_row(DType::Q5_0, &b, y.data(), kQk);
    for (int j = 0; j < kQk; ++j) {
      const int low = j < 16 ? j : 15 - (j - 16);
      const int q = low | static_cast<int>(((qh >> j) & 1u) << 4);
      CHECK(y[static_cast<size_t>(j)] == static_cast<float>(q - 16));
    }
  }
}

TEST_CASE("dequantize: F16 and BF16 rows") {
  const std::vector<float> values = {0.0f, -1.0f, 3.140625f, 65504.0f, -0.0001220703125f, 1e-7f};
  std::vector<uint16_t> h, b;
  for (float v : values) {
    h.push_back(fp32_to_fp16(v));
    b.push_back(fp32_to_bf16(v));
  }
  std::vector<float> yh(values.size()), yb(values.size());
  dequantize_row(DType::F16, h.data(), yh.data(), static_cast<int64_t>(values.size()));
  dequantize_row(DType::BF16, b.data(), yb.data(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) {
    CHECK(yh[i] == fp16_to_fp32(h[i]));
    CHECK(yb[i] == bf16_to_fp32(b[i]));
  }
  CHECK(yh[2] == 3.140625f);
  CHECK(yh[3] == 65504.0f);
}

}  // namespace sluice::backends::cpu
