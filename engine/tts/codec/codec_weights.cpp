#include "engine/tts/codec/codec_weights.h"

#include <cmath>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>

#include "backends/conv_int16.h"
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
  Loader(const loader::TensorSet& set, backends::Backend& backend, CodecPrecision precision, CodecWeights& out)
      : set_(set), backend_(backend), precision_(precision), out_(out) {}

  std::vector<float> read(const std::string& name, std::initializer_list<int64_t> shape) const {
    loader::check_load_stop();  // a shutdown need not wait for the rest of the codec
    return set_.require_f32(name, shape);
  }

  Tensor upload(const std::vector<float>& values, std::initializer_list<int64_t> shape) {
    return loader::upload_f32(backend_, out_.buffers, values, shape);
  }

  // A conv weight in backend.h's tap-major layout [rows, taps * cin]: F32 (on the
  // CPU as conv_panels.h's panels: the same values, a faster tile), or quantized to
  // conv_int16.h's I16 rows.
  Tensor conv_weight(const std::vector<float>& packed, int64_t rows, int64_t taps, int64_t cin) {
    if (precision_ == CodecPrecision::f32) return backends::upload_conv_weight(backend_, out_.buffers, packed, rows, cin);
    const std::vector<int16_t> q = backends::pack_int16_conv_weights(packed, rows, taps, cin);
    auto& buffer = out_.buffers.emplace_back(backend_.allocate(q.size() * sizeof(int16_t)));
    const Tensor t = Tensor::make(buffer.get(), 0, DType::I16, {rows, static_cast<int64_t>(q.size()) / rows});
    backend_.upload(t, std::as_bytes(std::span<const int16_t>(q)));
    return t;
  }

  // A tensor used as stored (norm weights, biases, Linear weights [out, in]).
  Tensor plain(const std::string& name, std::initializer_list<int64_t> shape) { return upload(read(name, shape), shape); }

  // PyTorch Conv1d [Cout, Cin, k] -> [Cout, k*Cin], the tap moved outward.
  ConvWeights conv(const std::string& prefix, int64_t cout, int64_t cin, int64_t taps, int dilation) {
    const std::vector<float> packed = loader::conv1d_taps_outward(read(prefix + ".weight", {cout, cin, taps}), cout, cin, taps);
    ConvWeights out;
    out.w = conv_weight(packed, cout, taps, cin);
    out.bias = plain(prefix + ".bias", {cout});
    out.taps = taps;
    out.dilation = dilation;
    return out;
  }

  // PyTorch ConvTranspose1d [Cin, Cout, m*s] -> [s*Cout, m*Cin] as backend.h says:
  // w[r*Cout + o, q*Cin + c] = W[c, o, r + (m-1-q)*s].
  UpConvWeights up_conv(const std::string& prefix, int64_t cin, int64_t cout, int64_t kernel, int64_t stride) {
    if (kernel % stride != 0) set_.fail(prefix + ".weight", "has a kernel that is not a multiple of its stride");
    const int64_t m = kernel / stride;
    const std::vector<float> w = read(prefix + ".weight", {cin, cout, kernel});
    std::vector<float> packed(w.size());
    for (int64_t r = 0; r < stride; ++r)
      for (int64_t o = 0; o < cout; ++o)
        for (int64_t q = 0; q < m; ++q)
          for (int64_t c = 0; c < cin; ++c)
            packed[((r * cout + o) * m + q) * cin + c] = w[(c * cout + o) * kernel + r + (m - 1 - q) * stride];
    UpConvWeights out;
    out.w = conv_weight(packed, stride * cout, m, cin);
    out.bias = plain(prefix + ".bias", {cout});
    out.stride = static_cast<int>(stride);
    out.taps = m;
    return out;
  }

  SnakeWeights snake(const std::string& prefix, int64_t channels) {
    std::vector<float> alpha = read(prefix + ".alpha", {channels});
    std::vector<float> beta = read(prefix + ".beta", {channels});
    for (float& a : alpha) a = std::exp(a);
    for (float& b : beta) b = 1.0f / (std::exp(b) + 1e-9f);
    return {upload(alpha, {channels}), upload(beta, {channels})};
  }

  // Rows of a [rows, cols] matrix (and its bias) times scale[row].
  std::vector<float> scaled_rows(const std::string& name, int64_t rows, int64_t cols, const std::vector<float>& scale) {
    std::vector<float> w = read(name, {rows, cols});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) w[r * cols + c] *= scale[r];
    return w;
  }

  const loader::TensorSet& set_;
  backends::Backend& backend_;
  CodecPrecision precision_;
  CodecWeights& out_;
};

// Every table_j = embedding_sum / clamp(cluster_usage, 1e-5) [size, table_dim], times
// its output_proj [codebook_dim, table_dim] on the backend, into one [Q*size, codebook_dim].
Tensor load_codebooks(Loader& ld, const CodecConfig& c) {
  const int64_t size = c.codebook_size, tdim = c.table_dim(), q = c.num_quantizers;
  std::vector<float> tables(static_cast<size_t>(q * size * tdim));
  for (int64_t j = 0; j < q; ++j) {
    const std::string prefix = j == 0 ? "decoder.quantizer.rvq_first.vq.layers.0._codebook."
                                      : "decoder.quantizer.rvq_rest.vq.layers." + std::to_string(j - 1) + "._codebook.";
    const std::vector<float> sum = ld.read(prefix + "embedding_sum", {size, tdim});
    const std::vector<float> usage = ld.read(prefix + "cluster_usage", {size});
    for (int64_t r = 0; r < size; ++r) {
      const float divisor = std::max(usage[r], 1e-5f);
      for (int64_t e = 0; e < tdim; ++e) tables[(j * size + r) * tdim + e] = sum[r * tdim + e] / divisor;
    }
  }
  // The raw tables and projections are needed only for the product: they live in
  // `scratch`, freed on return.
  CodecWeights scratch;
  Loader temp(ld.set_, ld.backend_, CodecPrecision::f32, scratch);
  const Tensor raw = temp.upload(tables, {q * size, tdim});
  const Tensor first = temp.plain("decoder.quantizer.rvq_first.output_proj.weight", {c.codebook_dim, tdim, 1})
                           .reshape({c.codebook_dim, tdim});
  const Tensor rest = temp.plain("decoder.quantizer.rvq_rest.output_proj.weight", {c.codebook_dim, tdim, 1})
                          .reshape({c.codebook_dim, tdim});
  auto& buffer = ld.out_.buffers.emplace_back(
      ld.backend_.allocate(static_cast<size_t>(q * size * c.codebook_dim) * sizeof(float)));
  const Tensor codebooks = Tensor::make(buffer.get(), 0, DType::F32, {q * size, c.codebook_dim});
  ld.backend_.matmul(raw.slice(0, size), first, codebooks.slice(0, size));
  ld.backend_.matmul(raw.slice(size, (q - 1) * size), rest, codebooks.slice(size, (q - 1) * size));
  ld.backend_.synchronize();
  return codebooks;
}

void load_transformer(Loader& ld, const CodecConfig& c, CodecWeights& w) {
  const int64_t d = c.hidden_size, q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  const int64_t f = c.intermediate_size;
  const std::string base = "decoder.pre_transformer.";
  w.input_proj_w = ld.plain(base + "input_proj.weight", {d, c.latent_dim});
  w.input_proj_b = ld.plain(base + "input_proj.bias", {d});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string p = base + "layers." + std::to_string(i) + ".";
    const std::vector<float> attn_scale = ld.read(p + "self_attn_layer_scale.scale", {d});
    const std::vector<float> mlp_scale = ld.read(p + "mlp_layer_scale.scale", {d});
    LayerWeights& l = w.layers.emplace_back();
    l.attn_norm = ld.plain(p + "input_layernorm.weight", {d});
    l.attn_q = ld.plain(p + "self_attn.q_proj.weight", {q, d});
    l.attn_k = ld.plain(p + "self_attn.k_proj.weight", {kv, d});
    l.attn_v = ld.plain(p + "self_attn.v_proj.weight", {kv, d});
    l.attn_output = ld.upload(ld.scaled_rows(p + "self_attn.o_proj.weight", d, q, attn_scale), {d, q});
    l.ffn_norm = ld.plain(p + "post_attention_layernorm.weight", {d});
    l.ffn_gate = ld.plain(p + "mlp.gate_proj.weight", {f, d});
    l.ffn_up = ld.plain(p + "mlp.up_proj.weight", {f, d});
    l.ffn_down = ld.upload(ld.scaled_rows(p + "mlp.down_proj.weight", d, f, mlp_scale), {d, f});
  }
  w.output_norm = ld.plain(base + "norm.weight", {d});
  w.output_proj_w = ld.plain(base + "output_proj.weight", {c.latent_dim, d});
  w.output_proj_b = ld.plain(base + "output_proj.bias", {c.latent_dim});
}

void load_upsampler(Loader& ld, const CodecConfig& c, CodecWeights& w) {
  const int64_t l = c.latent_dim;
  for (size_t i = 0; i < c.upsampling_ratios.size(); ++i) {
    const std::string p = "decoder.upsample." + std::to_string(i) + ".";
    const int64_t s = c.upsampling_ratios[i];
    UpsampleWeights& u = w.upsample.emplace_back();
    u.up = ld.up_conv(p + "0.conv", l, l, s, s);
    u.dw_w = ld.plain(p + "1.dwconv.conv.weight", {l, 1, u.dw_taps}).reshape({l, u.dw_taps});
    u.dw_b = ld.plain(p + "1.dwconv.conv.bias", {l});
    u.norm_w = ld.plain(p + "1.norm.weight", {l});
    u.norm_b = ld.plain(p + "1.norm.bias", {l});
    u.pw1_w = ld.plain(p + "1.pwconv1.weight", {4 * l, l});
    u.pw1_b = ld.plain(p + "1.pwconv1.bias", {4 * l});
    const std::vector<float> gamma = ld.read(p + "1.gamma", {l});
    u.pw2_w = ld.upload(ld.scaled_rows(p + "1.pwconv2.weight", l, 4 * l, gamma), {l, 4 * l});
    std::vector<float> bias = ld.read(p + "1.pwconv2.bias", {l});
    for (int64_t o = 0; o < l; ++o) bias[o] *= gamma[o];
    u.pw2_b = ld.upload(bias, {l});
  }
}

void load_vocoder(Loader& ld, const CodecConfig& c, CodecWeights& w) {
  w.first_conv = ld.conv("decoder.decoder.0.conv", c.decoder_dim, c.latent_dim, 7, 1);
  const size_t num_blocks = c.upsample_rates.size();
  for (size_t i = 0; i < num_blocks; ++i) {
    const std::string p = "decoder.decoder." + std::to_string(i + 1) + ".block.";
    const int64_t cin = c.block_channels(i), cout = c.block_channels(i + 1), rate = c.upsample_rates[i];
    DecoderBlockWeights& b = w.blocks.emplace_back();
    b.snake = ld.snake(p + "0", cin);
    b.up = ld.up_conv(p + "1.conv", cin, cout, 2 * rate, rate);
    const int dilations[] = {1, 3, 9};
    for (int u = 0; u < 3; ++u) {
      const std::string q = p + std::to_string(u + 2) + ".";
      ResidualUnitWeights& unit = b.units.emplace_back();
      unit.act1 = ld.snake(q + "act1", cout);
      unit.conv1 = ld.conv(q + "conv1.conv", cout, cout, 7, dilations[u]);
      unit.act2 = ld.snake(q + "act2", cout);
      unit.conv2 = ld.conv(q + "conv2.conv", cout, cout, 1, 1);
    }
  }
  const std::string last = std::to_string(num_blocks + 1), out = std::to_string(num_blocks + 2);
  w.final_snake = ld.snake("decoder.decoder." + last, c.block_channels(num_blocks));
  w.last_conv = ld.conv("decoder.decoder." + out + ".conv", 1, c.block_channels(num_blocks), 7, 1);
}

}  // namespace

CodecPrecision parse_codec_precision(std::string_view name) {
  if (name == "f32") return CodecPrecision::f32;
  if (name == "int16") return CodecPrecision::int16;
  throw std::invalid_argument("codec precision '" + std::string(name) + "' is not f32 or int16");
}

CodecWeights load_codec_weights(const loader::TensorSet& set, const CodecConfig& config,
                                backends::Backend& backend, CodecPrecision precision) {
  if (precision == CodecPrecision::int16 && backend.device() != backends::DeviceKind::cpu)
    throw std::invalid_argument("codec precision int16: the " + backend.name() +
                                " backend has no int16 convolutions (use f32)");
  CodecWeights w;
  Loader ld(set, backend, precision, w);
  w.codebooks = load_codebooks(ld, config);
  w.pre_conv = ld.conv("decoder.pre_conv.conv", config.latent_dim, config.codebook_dim, 3, 1);
  load_transformer(ld, config, w);
  load_upsampler(ld, config, w);
  load_vocoder(ld, config, w);
  return w;
}

}  // namespace sluice::engine::tts
