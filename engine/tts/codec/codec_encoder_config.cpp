#include "engine/tts/codec/codec_encoder_config.h"

#include "engine/tts/codec/codec_config_fields.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/loader/config_reader.h"
#include "engine/loader/json_file.h"
#include "engine/loader/load_error.h"

namespace sluice::engine::tts {
namespace {

using loader::detail::ConfigReader;
using detail::positive;
using detail::strides;

constexpr uint64_t kMaxConfigBytes = 1 << 20;

// A flag the encoder cannot run otherwise: absent means the MimiConfig default.
void require_flag(const ConfigReader& r, std::string_view key, bool wanted, bool fallback, const char* why) {
  if (r.boolean(key).value_or(fallback) != wanted) r.fail(key, std::string("is ") + (wanted ? "false" : "true") + "; " + why);
}

void require_string(const ConfigReader& r, std::string_view key, const std::string& wanted, const char* why) {
  if (auto value = r.string(key); value && *value != wanted) r.fail(key, "is '" + *value + "'; " + why);
}

}  // namespace

CodecEncoderConfig read_codec_encoder_config(const std::filesystem::path& config_json) {
  const nlohmann::json root = loader::detail::parse_json_file(config_json, kMaxConfigBytes);
  if (!root.is_object()) throw loader::LoadError(config_json, "is not a JSON object");
  const ConfigReader top(config_json, root, "");
  const nlohmann::json* encoder = top.object("encoder_config");
  if (encoder == nullptr) top.fail("encoder_config", "is missing");
  const ConfigReader r(config_json, *encoder, "encoder_config.");

  CodecEncoderConfig c;
  c.sample_rate = positive(top, "input_sample_rate");
  if (r.integer("sampling_rate").value_or(c.sample_rate) != c.sample_rate)
    r.fail("sampling_rate", "differs from input_sample_rate");
  if (r.integer("audio_channels").value_or(1) != 1) r.fail("audio_channels", "must be 1 (mono)");
  require_flag(r, "use_causal_conv", true, true, "the encoder runs causal convolutions only");
  require_flag(r, "use_conv_shortcut", false, false, "the residual units' shortcut is the identity");
  require_string(r, "pad_mode", "constant", "the SEANet convolutions pad with zeros");
  require_string(r, "hidden_act", "gelu", "the transformer's MLP is fc1, exact GELU, fc2");
  require_flag(r, "attention_bias", false, false, "the transformer's projections have no bias");
  if (r.integer("num_residual_layers").value_or(1) != 1)
    r.fail("num_residual_layers", "must be 1 (one residual unit per SEANet stage, dilation 1)");

  c.num_filters = positive(r, "num_filters");
  c.kernel_size = positive(r, "kernel_size");
  c.residual_kernel_size = positive(r, "residual_kernel_size");
  c.last_kernel_size = positive(r, "last_kernel_size");
  c.compress = positive(r, "compress");
  if (c.num_filters % c.compress != 0) r.fail("compress", "must divide num_filters");
  c.strides = strides(r, "upsampling_ratios");
  std::reverse(c.strides.begin(), c.strides.end());

  const detail::TransformerFields t = detail::transformer_fields(r, "norm_eps");
  c.hidden_size = t.hidden_size;
  c.intermediate_size = t.intermediate_size;
  c.num_layers = t.num_layers;
  c.num_heads = t.num_heads;
  c.num_kv_heads = t.num_kv_heads;
  c.head_dim = t.head_dim;
  c.norm_eps = t.norm_eps;
  c.rope_theta = t.rope_theta;

  // Mimi's downsample: kernel 2 * (SEANet frame rate / frame rate), stride 2 (fixed
  // in the class), so a ratio of 2 halves the rate.
  const float frame_rate = r.real("_frame_rate").value_or(r.real("frame_rate").value_or(0.0f));
  if (!(frame_rate > 0.0f)) r.fail("_frame_rate", "is missing or not positive");
  const double seanet_rate = std::ceil(static_cast<double>(c.sample_rate) / static_cast<double>(c.seanet_stride()));
  if (static_cast<int64_t>(seanet_rate / frame_rate) != 2)
    r.fail("_frame_rate", "must be half the SEANet rate sampling_rate / prod(upsampling_ratios)");
  c.downsample_stride = 2;

  c.codebook_size = positive(r, "codebook_size");
  c.codebook_dim = positive(r, "codebook_dim");
  const int64_t projected = r.integer("vector_quantization_hidden_dimension").value_or(c.codebook_dim);
  if (projected != c.codebook_dim) r.fail("vector_quantization_hidden_dimension", "must equal codebook_dim");
  if (projected == c.hidden_size)
    r.fail("vector_quantization_hidden_dimension", "equals hidden_size: a quantizer without input_proj is not supported");
  c.num_quantizers = positive(r, "num_quantizers");
  c.num_semantic = r.integer("num_semantic_quantizers").value_or(1);
  if (c.num_semantic < 1 || c.num_semantic >= c.num_quantizers)
    r.fail("num_semantic_quantizers", "must be at least 1 and below num_quantizers");
  c.num_codes = positive(top, "encoder_valid_num_quantizers");
  if (c.num_codes > c.num_quantizers || c.num_codes <= c.num_semantic)
    top.fail("encoder_valid_num_quantizers", "must lie in (num_semantic_quantizers, num_quantizers]");

  c.samples_per_frame = positive(top, "encode_downsample_rate");
  if (c.samples_per_frame != c.seanet_stride() * c.downsample_stride)
    top.fail("encode_downsample_rate", "is " + std::to_string(c.samples_per_frame) + " but the encoder's strides multiply to " +
                                           std::to_string(c.seanet_stride() * c.downsample_stride));
  return c;
}

CodecEncoderConfig codec_encoder_config_preset() {
  CodecEncoderConfig c;
  c.sample_rate = 24000;
  c.num_filters = 64;
  c.kernel_size = 7;
  c.residual_kernel_size = 3;
  c.last_kernel_size = 3;
  c.compress = 2;
  c.strides = {4, 5, 6, 8};
  c.hidden_size = 512;
  c.intermediate_size = 2048;
  c.num_layers = 8;
  c.num_heads = 8;
  c.num_kv_heads = 8;
  c.head_dim = 64;
  c.norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.downsample_stride = 2;
  c.codebook_size = 2048;
  c.codebook_dim = 256;
  c.num_quantizers = 32;
  c.num_semantic = 1;
  c.num_codes = 16;
  c.samples_per_frame = 1920;
  return c;
}

}  // namespace sluice::engine::tts
