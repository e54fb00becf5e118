#pragma once
// Field readers shared by the speech tokenizer's decoder and encoder configs
// (codec_config.cpp, codec_encoder_config.cpp); defined in codec_config.cpp.
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/loader/config_reader.h"

namespace sluice::engine::tts::detail {

// A required integer above 0 (fails naming the key otherwise).
int64_t positive(const loader::detail::ConfigReader& r, std::string_view key);
// A required list of 1 to 8 strides, each an integer in [1, 64].
std::vector<int64_t> strides(const loader::detail::ConfigReader& r, std::string_view key);

}  // namespace sluice::engine::tts::detail
