#pragma once
// Llama 3 RoPE frequency scaling recovered from the per-frequency divisors that
// llama.cpp's converter stores as `rope_freqs.weight` instead of metadata.
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace sluice::loader::detail {

// Fills rope.llama3_* so that the Llama 3 formula reproduces `factors` (one divisor
// per rotated pair, factors[i] for inverse frequency theta^(-2i / num_rotated)).
// The formula only depends on factor, original_context / (high - low) and
// low / (high - low), so the split chosen here (low_freq_factor near 1, an integer
// original context) is exact for these frequencies. All ones: no scaling.
// Returns the reason when the factors do not have that shape.
std::optional<std::string> set_llama3_from_factors(backends::RopeParams& rope,
                                                   std::span<const float> factors);

// The divisors the Llama 3 formula gives for `rope` (all ones when it is off).
std::vector<double> llama3_factors(const backends::RopeParams& rope);

}  // namespace sluice::loader::detail
