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

// The shape of the transformer each side of the codec has (the decoder's
// pre_transformer, the encoder's Mimi transformer), checked: heads divide, the head
// dimension is even (RoPE pairs), the norm epsilon (named `eps_key`) and the RoPE
// base are sane.
struct TransformerFields {
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
};
TransformerFields transformer_fields(const loader::detail::ConfigReader& r, std::string_view eps_key);

}  // namespace sluice::engine::tts::detail
