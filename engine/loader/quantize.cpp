#include "engine/loader/quantize.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/loader/weight_table.h"

namespace sluice::loader {
namespace {

using backends::DType;

constexpr int64_t kBlock = 32;  // elements per Q8_0 / Q4_0 block

// binary32 -> binary16, round to nearest even (scales are finite and small).
uint16_t f32_to_f16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const float magnitude = std::fabs(value);
  if (!(magnitude < 65520.0f)) return static_cast<uint16_t>(sign | (magnitude != magnitude ? 0x7E00u : 0x7C00u));
  if (magnitude < 0x1p-14f) {  // subnormal: a multiple of 2^-24, rounded to nearest even
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(magnitude * 0x1p24f)));
  }
  const uint32_t m = std::bit_cast<uint32_t>(magnitude);
  // Rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to even.
  const uint32_t rounded = m + 0xFFFu + ((m >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - ((127u - 15u) << 23)) >> 13));
}

// One block of 32 values.
void quantize_q8_0(const float* x, std::byte* out) {
  float amax = 0.0f;
  for (int64_t i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t d16 = f32_to_f16(d);
  std::memcpy(out, &d16, 2);
  for (int64_t i = 0; i < kBlock; ++i) {
    const auto q = static_cast<int8_t>(std::round(x[i] * id));  // |x * id| <= 127
    std::memcpy(out + 2 + i, &q, 1);
  }
}

void quantize_q4_0(const float* x, std::byte* out) {
  float extreme = 0.0f;  // the value of largest magnitude, with its sign (the first on ties)
  for (int64_t i = 0; i < kBlock; ++i)
    if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
  const float d = extreme / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t d16 = f32_to_f16(d);
  std::memcpy(out, &d16, 2);
  auto level = [&](float v) {
    const float shifted = v * id + 8.5f;
    return static_cast<uint8_t>(std::clamp(std::trunc(shifted), 0.0f, 15.0f));
  };
  for (int64_t i = 0; i < kBlock / 2; ++i) {
    const auto packed = static_cast<uint8_t>(level(x[i]) | (level(x[i + kBlock / 2]) << 4));
    std::memcpy(out + 2 + i, &packed, 1);
  }
}

}  // namespace

std::optional<DType> parse_load_quantization(std::string_view name) {
  if (name.empty() || name == "none") return std::nullopt;
  if (name == "q8_0") return DType::Q8_0;
  if (name == "q4_0") return DType::Q4_0;
  throw std::invalid_argument("quantize must be none, q8_0 or q4_0, got '" + std::string(name) + "'");
}

bool can_quantize(DType from, int64_t cols) {
  return (from == DType::F32 || from == DType::F16 || from == DType::BF16) && cols > 0 && cols % kBlock == 0;
}

std::vector<std::byte> quantize_matrix(DType from, std::span<const std::byte> bytes, int64_t rows, int64_t cols,
                                       DType to) {
  if (!can_quantize(from, cols) || (to != DType::Q8_0 && to != DType::Q4_0) || rows < 0)
    throw std::invalid_argument("quantize_matrix: F32/F16/BF16 rows of a multiple of 32 to Q8_0 or Q4_0 only");
  const size_t block_bytes = to == DType::Q8_0 ? 2 + kBlock : 2 + kBlock / 2;
  const size_t element_bytes = from == DType::F32 ? 4 : 2;
  const size_t row_bytes = static_cast<size_t>(cols) * element_bytes;
  if (bytes.size() != static_cast<size_t>(rows) * row_bytes)
    throw std::invalid_argument("quantize_matrix: byte count does not match the shape");
  std::vector<std::byte> out(static_cast<size_t>(rows * (cols / kBlock)) * block_bytes);
  std::byte* dst = out.data();
  for (int64_t r = 0; r < rows; ++r) {
    // One row at a time keeps the F32 copy small however large the matrix.
    const std::optional<std::vector<float>> row =
        detail::to_f32(from, bytes.subspan(static_cast<size_t>(r) * row_bytes, row_bytes), static_cast<uint64_t>(cols));
    for (int64_t b = 0; b < cols / kBlock; ++b, dst += block_bytes) {
      if (to == DType::Q8_0) {
        quantize_q8_0(row->data() + b * kBlock, dst);
      } else {
        quantize_q4_0(row->data() + b * kBlock, dst);
      }
    }
  }
  return out;
}

}  // namespace sluice::loader
