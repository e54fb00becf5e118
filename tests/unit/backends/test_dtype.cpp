#include "backends/dtype.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

namespace sluice::backends::unit_backends_test_dtype {
namespace {

struct Expected {
  uint32_t id;
  const char* name;
  uint32_t block_size;
  uint32_t block_bytes;
};

// Copied by hand from GGMLQuantizationType / GGML_QUANT_SIZES of the gguf package 0.19.
constexpr Expected kExpected[] = {
    {0, "F32", 1, 4},          {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},       {6, "Q5_0", 32, 22},       {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},       {9, "Q8_1", 32, 40},       {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},    {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},    {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74},   {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},    {21, "IQ3_S", 256, 110},   {22, "IQ2_S", 256, 82},
    {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},          {25, "I16", 1, 2},
    {26, "I32", 1, 4},         {27, "I64", 1, 8},         {28, "F64", 1, 8},
    {29, "IQ1_M", 256, 56},    {30, "BF16", 1, 2},        {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},    {39, "MXFP4", 32, 17},     {40, "NVFP4", 64, 36},
    {41, "Q1_0", 128, 18},
};

}  // namespace

TEST_CASE("dtype: table matches the GGML type ids, block sizes and block bytes") {
  for (const Expected& expected : kExpected) {
    CAPTURE(expected.name);
    const DTypeTraits* traits = find_dtype(expected.id);
    REQUIRE(traits != nullptr);
    CHECK(traits->name == expected.name);
    CHECK(traits->block_size == expected.block_size);
    CHECK(traits->block_bytes == expected.block_bytes);
    CHECK(dtype_name(static_cast<DType>(expected.id)) == expected.name);
  }
  CHECK(static_cast<uint32_t>(DType::Q4_1) == 3);
  CHECK(static_cast<uint32_t>(DType::BF16) == 30);
  CHECK(static_cast<uint32_t>(DType::MXFP4) == 39);
}

TEST_CASE("dtype: removed and unknown ids are not found") {
  for (const uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 1000u, 0xFFFFFFFFu}) {
    CAPTURE(id);
    CHECK(find_dtype(id) == nullptr);
  }
  CHECK(dtype_name(static_cast<DType>(4)) == "?");
  CHECK_FALSE(dtype_bytes(static_cast<DType>(4), 32).has_value());
}

TEST_CASE("dtype: byte sizes of whole blocks") {
  CHECK(dtype_bytes(DType::F32, 0) == 0u);
  CHECK(dtype_bytes(DType::F32, 10) == 40u);
  CHECK(dtype_bytes(DType::BF16, 7) == 14u);
  CHECK(dtype_bytes(DType::Q4_1, 64) == 40u);
  CHECK(dtype_bytes(DType::Q8_0, 576 * 49152) == uint64_t{576} * 49152 / 32 * 34);
  CHECK(dtype_bytes(DType::Q6_K, 512) == 420u);
}

TEST_CASE("dtype: partial blocks and overflow give nullopt") {
  CHECK_FALSE(dtype_bytes(DType::Q4_0, 33).has_value());
  CHECK_FALSE(dtype_bytes(DType::Q4_K, 128).has_value());
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  CHECK_FALSE(dtype_bytes(DType::F32, kMax / 2).has_value());
  CHECK_FALSE(dtype_bytes(DType::I64, uint64_t{1} << 61).has_value());
  CHECK(dtype_bytes(DType::I64, (uint64_t{1} << 61) - 1) == ((uint64_t{1} << 61) - 1) * 8);
  CHECK(dtype_bytes(DType::I8, kMax) == kMax);
  // 2^64 - 256 elements of Q8_K: 2^56 - 1 blocks of 292 bytes do not fit.
  CHECK_FALSE(dtype_bytes(DType::Q8_K, kMax - 255).has_value());
}

}  // namespace sluice::backends
