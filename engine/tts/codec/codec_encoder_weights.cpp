#include "engine/tts/codec/codec_encoder_weights.h"

#include <algorithm>
#include <string>

#include "backends/conv_panels.h"
#include "engine/loader/host_upload.h"
#include "engine/loader/load_stop.h"

namespace sluice::engine::tts {
namespace {

using backends::DType;
using backends::Tensor;

// Reads tensors from the set, reshapes them on the host and uploads the result.
class Loader {
 public:
  Loader(const loader::TensorSet& set, backends::Backend& backend, CodecEncoderWeights& out)
      : set_(set), backend_(backend), out_(out) {}

  std::vector<float> read(const std::string& name, std::initializer_list<int64_t> shape) const {
    loader::check_load_stop();  // a shutdown need not wait for the rest of the encoder
    return set_.require_f32(name, shape);
  }

  Tensor upload(const std::vector<float>& values, std::initializer_list<int64_t> shape) {
    return loader::upload_f32(backend_, out_.buffers, values, shape);
  }

  Tensor plain(const std::string& name, std::initializer_list<int64_t> shape) { return upload(read(name, shape), shape); }

  // PyTorch Conv1d [Cout, Cin, k] -> [Cout, k*Cin], the tap moved outward (on the
  // CPU as conv_panels.h's panels; a strided conv reads rows of stride * Cin:
  // codec_encoder_seanet.cpp).
  EncoderConv conv(const std::string& prefix, int64_t cout, int64_t cin, int64_t kernel, int64_t stride, bool bias) {
    const std::vector<float> packed =
        loader::conv1d_taps_outward(read(prefix + ".weight", {cout, cin, kernel}), cout, cin, kernel);
    EncoderConv out;
    out.w = backends::upload_conv_weight(backend_, out_.buffers, packed, cout, stride * cin);
    if (bias) out.bias = plain(prefix + ".bias", {cout});
    out.kernel = kernel;
    out.stride = stride;
    return out;
  }

  // A Linear [rows, cols] with row r times scale[r].
  Tensor scaled_rows(const std::string& name, int64_t rows, int64_t cols, const std::string& scale_name) {
    std::vector<float> w = read(name, {rows, cols});
    const std::vector<float> scale = read(scale_name, {rows});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) w[r * cols + c] *= scale[r];
    return upload(w, {rows, cols});
  }

  const loader::TensorSet& set_;
  backends::Backend& backend_;
  CodecEncoderWeights& out_;
};

const std::string kSeanet = "encoder.encoder.layers.";

void load_seanet(Loader& ld, const CodecEncoderConfig& c, CodecEncoderWeights& w) {
  w.first = ld.conv(kSeanet + "0.conv", c.num_filters, 1, c.kernel_size, 1, true);
  // Module indices: per stage a residual unit (3i + 1), an ELU, the strided conv
  // (3i + 3); then an ELU and the last conv.
  for (size_t i = 0; i < c.strides.size(); ++i) {
    const int64_t ch = c.stage_channels(i), s = c.strides[i];
    const std::string unit = kSeanet + std::to_string(3 * i + 1) + ".block.";
    EncoderStage& stage = w.stages.emplace_back();
    stage.unit_conv1 = ld.conv(unit + "1.conv", ch / c.compress, ch, c.residual_kernel_size, 1, true);
    stage.unit_conv2 = ld.conv(unit + "3.conv", ch, ch / c.compress, 1, 1, true);
    stage.down = ld.conv(kSeanet + std::to_string(3 * i + 3) + ".conv", 2 * ch, ch, 2 * s, s, true);
  }
  w.last = ld.conv(kSeanet + std::to_string(3 * c.strides.size() + 2) + ".conv", c.hidden_size,
                   c.stage_channels(c.strides.size()), c.last_kernel_size, 1, true);
}

void load_transformer(Loader& ld, const CodecEncoderConfig& c, CodecEncoderWeights& w) {
  const int64_t h = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = "encoder.encoder_transformer.layers." + std::to_string(i) + ".";
    EncoderLayerWeights& l = w.layers.emplace_back();
    l.attn_norm_w = ld.plain(p + "input_layernorm.weight", {h});
    l.attn_norm_b = ld.plain(p + "input_layernorm.bias", {h});
    l.q = ld.plain(p + "self_attn.q_proj.weight", {q, h});
    l.k = ld.plain(p + "self_attn.k_proj.weight", {kv, h});
    l.v = ld.plain(p + "self_attn.v_proj.weight", {kv, h});
    l.o = ld.scaled_rows(p + "self_attn.o_proj.weight", h, q, p + "self_attn_layer_scale.scale");
    l.mlp_norm_w = ld.plain(p + "post_attention_layernorm.weight", {h});
    l.mlp_norm_b = ld.plain(p + "post_attention_layernorm.bias", {h});
    l.fc1 = ld.plain(p + "mlp.fc1.weight", {c.intermediate_size, h});
    l.fc2 = ld.scaled_rows(p + "mlp.fc2.weight", h, c.intermediate_size, p + "mlp_layer_scale.scale");
  }
}

// The kept codebooks: the semantic ones, then the first acoustic ones.
void load_quantizer(Loader& ld, const CodecEncoderConfig& c, CodecEncoderWeights& w) {
  const std::string base = "encoder.quantizer.";
  const std::string semantic = base + "semantic_residual_vector_quantizer.";
  const std::string acoustic = base + "acoustic_residual_vector_quantizer.";
  w.semantic_proj = ld.plain(semantic + "input_proj.weight", {c.codebook_dim, c.hidden_size, 1})
                        .reshape({c.codebook_dim, c.hidden_size});
  w.acoustic_proj = ld.plain(acoustic + "input_proj.weight", {c.codebook_dim, c.hidden_size, 1})
                        .reshape({c.codebook_dim, c.hidden_size});
  const int64_t size = c.codebook_size, dim = c.codebook_dim;
  std::vector<float> tables(static_cast<size_t>(c.num_codes * size * dim));
  w.codebook_norms.assign(static_cast<size_t>(c.num_codes * size), 0.0f);
  for (int64_t j = 0; j < c.num_codes; ++j) {
    const std::string prefix = (j < c.num_semantic ? semantic + "layers." + std::to_string(j)
                                                   : acoustic + "layers." + std::to_string(j - c.num_semantic)) +
                               ".codebook.";
    const std::vector<float> sum = ld.read(prefix + "embed_sum", {size, dim});
    const std::vector<float> usage = ld.read(prefix + "cluster_usage", {size});
    for (int64_t r = 0; r < size; ++r) {
      const float divisor = std::max(usage[r], 1e-5f);
      float norm = 0.0f;
      for (int64_t e = 0; e < dim; ++e) {
        const float v = sum[r * dim + e] / divisor;
        tables[(j * size + r) * dim + e] = v;
        norm += v * v;
      }
      w.codebook_norms[static_cast<size_t>(j * size + r)] = norm;
    }
  }
  w.codebooks = ld.upload(tables, {c.num_codes * size, dim});
}

}  // namespace

CodecEncoderWeights load_codec_encoder_weights(const loader::TensorSet& set, const CodecEncoderConfig& config,
                                               backends::Backend& backend) {
  CodecEncoderWeights w;
  Loader ld(set, backend, w);
  load_seanet(ld, config, w);
  load_transformer(ld, config, w);
  const int64_t h = config.hidden_size, s = config.downsample_stride;
  w.downsample = ld.conv("encoder.downsample.conv", h, h, 2 * s, s, false);
  load_quantizer(ld, config, w);
  return w;
}

}  // namespace sluice::engine::tts
