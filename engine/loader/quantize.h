#pragma once
// Quantization at load: F32 / F16 / BF16 matrices to Q8_0 or Q4_0 blocks (GGML's
// layouts), so a Hugging Face checkpoint runs on the integer kernels like a
// quantized GGUF does. The rounding is the formats' reference rounding (as
// gguf-py's quantizer does it), so a checkpoint quantized here and the same
// checkpoint converted to a Q8_0 / Q4_0 GGUF hold the same blocks:
//   Q8_0: d = max|x| / 127, q = round(x / d) (halves away from zero);
//   Q4_0: m = the x of largest magnitude, d = m / -8, q = min(15, trunc(x / d + 8.5)),
// with 1/d taken once per block, d stored as F16, and a zero block all zeros.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "backends/dtype.h"

namespace sluice::loader {

// "q8_0" / "q4_0" -> the dtype; "none" or "" -> nullopt; anything else throws
// std::invalid_argument naming the accepted values.
std::optional<backends::DType> parse_load_quantization(std::string_view name);

// Whether quantize_matrix() takes a matrix of this dtype and row length.
bool can_quantize(backends::DType from, int64_t cols);

// rows x cols elements of `from` (F32, F16 or BF16) as `to` (Q8_0 or Q4_0) blocks.
std::vector<std::byte> quantize_matrix(backends::DType from, std::span<const std::byte> bytes, int64_t rows,
                                       int64_t cols, backends::DType to);

}  // namespace sluice::loader
