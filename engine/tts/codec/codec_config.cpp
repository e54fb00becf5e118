#include "engine/tts/codec/codec_config.h"

#include "engine/tts/codec/codec_config_fields.h"

#include <string>

#include "engine/loader/config_reader.h"
#include "engine/loader/json_file.h"
#include "engine/loader/load_error.h"

namespace sluice::engine::tts {
using loader::detail::ConfigReader;
using detail::positive;
using detail::strides;

namespace {
constexpr uint64_t kMaxConfigBytes = 1 << 20;
}  // namespace

namespace detail {

int64_t positive(const ConfigReader& r, std::string_view key) {
  const int64_t value = r.required_integer(key);
  if (value <= 0) r.fail(key, "must be positive, not " + std::to_string(value));
  return value;
}

std::vector<int64_t> strides(const ConfigReader& r, std::string_view key) {
  const nlohmann::json* value = r.find(key);
  if (value == nullptr) r.fail(key, "is missing");
  if (!value->is_array() || value->empty() || value->size() > 8) r.fail(key, "is not a list of 1 to 8 strides");
  std::vector<int64_t> out;
  for (const nlohmann::json& item : *value) {
    if (!item.is_number_integer() || item.get<int64_t>() < 1 || item.get<int64_t>() > 64)
      r.fail(key, "holds a stride that is not an integer in [1, 64]");
    out.push_back(item.get<int64_t>());
  }
  return out;
}

TransformerFields transformer_fields(const ConfigReader& r, std::string_view eps_key) {
  TransformerFields t;
  t.hidden_size = positive(r, "hidden_size");
  t.intermediate_size = positive(r, "intermediate_size");
  t.num_layers = positive(r, "num_hidden_layers");
  t.num_heads = positive(r, "num_attention_heads");
  t.num_kv_heads = r.integer("num_key_value_heads").value_or(t.num_heads);
  if (t.num_kv_heads <= 0 || t.num_heads % t.num_kv_heads != 0)
    r.fail("num_key_value_heads", "must divide num_attention_heads");
  t.head_dim = r.integer("head_dim").value_or(t.hidden_size / t.num_heads);
  if (t.head_dim <= 0 || t.head_dim % 2 != 0) r.fail("head_dim", "must be positive and even (RoPE pairs)");
  t.norm_eps = r.real(eps_key).value_or(1e-5f);
  if (!(t.norm_eps > 0.0f)) r.fail(eps_key, "must be positive");
  t.rope_theta = r.real("rope_theta").value_or(10000.0f);
  if (!(t.rope_theta > 1.0f)) r.fail("rope_theta", "must be above 1");
  return t;
}

}  // namespace detail

CodecConfig read_codec_config(const std::filesystem::path& config_json) {
  const nlohmann::json root = loader::detail::parse_json_file(config_json, kMaxConfigBytes);
  if (!root.is_object()) throw loader::LoadError(config_json, "is not a JSON object");
  const ConfigReader top(config_json, root, "");
  const nlohmann::json* decoder = top.object("decoder_config");
  if (decoder == nullptr) top.fail("decoder_config", "is missing");
  const ConfigReader r(config_json, *decoder, "decoder_config.");

  CodecConfig c;
  c.num_quantizers = positive(r, "num_quantizers");
  c.codebook_size = positive(r, "codebook_size");
  c.codebook_dim = positive(r, "codebook_dim");
  if (c.codebook_dim % 2 != 0) r.fail("codebook_dim", "must be even (the tables are half as wide)");
  if (c.num_quantizers < 2) r.fail("num_quantizers", "must be at least 2 (one semantic, then acoustic)");
  c.latent_dim = positive(r, "latent_dim");
  c.decoder_dim = positive(r, "decoder_dim");
  const detail::TransformerFields t = detail::transformer_fields(r, "rms_norm_eps");
  c.hidden_size = t.hidden_size;
  c.intermediate_size = t.intermediate_size;
  c.num_layers = t.num_layers;
  c.num_heads = t.num_heads;
  c.num_kv_heads = t.num_kv_heads;
  c.head_dim = t.head_dim;
  c.rms_norm_eps = t.norm_eps;
  c.rope_theta = t.rope_theta;
  const int64_t window = positive(r, "sliding_window");
  if (window > 1 << 20) r.fail("sliding_window", "is implausibly large");
  c.sliding_window = static_cast<int32_t>(window);
  if (auto act = r.string("hidden_act"); act && *act != "silu")
    r.fail("hidden_act", "is '" + *act + "'; the codec decoder's MLP is SwiGLU (silu)");
  if (r.boolean("attention_bias").value_or(false)) r.fail("attention_bias", "is true; the decoder has none");
  c.upsampling_ratios = strides(r, "upsampling_ratios");
  c.upsample_rates = strides(r, "upsample_rates");
  if (c.decoder_dim % (int64_t{1} << c.upsample_rates.size()) != 0)
    r.fail("decoder_dim", "must halve evenly once per decoder block");

  c.output_sample_rate = positive(top, "output_sample_rate");
  c.samples_per_frame = positive(top, "decode_upsample_rate");
  int64_t product = 1;
  for (int64_t s : c.upsampling_ratios) product *= s;
  for (int64_t s : c.upsample_rates) product *= s;
  if (product != c.samples_per_frame)
    top.fail("decode_upsample_rate", "is " + std::to_string(c.samples_per_frame) +
                                         " but the decoder's strides multiply to " + std::to_string(product));
  return c;
}

CodecConfig codec_config_preset() {
  CodecConfig c;
  c.num_quantizers = 16;
  c.codebook_size = 2048;
  c.codebook_dim = 512;
  c.latent_dim = 1024;
  c.decoder_dim = 1536;
  c.hidden_size = 512;
  c.intermediate_size = 1024;
  c.num_layers = 8;
  c.num_heads = 16;
  c.num_kv_heads = 16;
  c.head_dim = 64;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.sliding_window = 72;
  c.upsampling_ratios = {2, 2};
  c.upsample_rates = {8, 5, 4, 3};
  c.output_sample_rate = 24000;
  c.samples_per_frame = 1920;
  return c;
}

}  // namespace sluice::engine::tts
