// CodecEncoder::run_transformer: Mimi's transformer over every 25 Hz frame at once.
// Per layer: x += scale_attn * o_proj(attention(LayerNorm(x))), then
// x += scale_mlp * fc2(gelu(fc1(LayerNorm(x)))), the scales folded into o_proj and
// fc2 at load. Attention is causal over every earlier frame, RoPE rotate-half
// style over the whole head, scale 1/sqrt(head_dim), no q/k norms, no biases. The
// keys and values go through a KV cache of the call's own that holds every frame,
// as one sequence.
//
// No sliding window: config.json says sliding_window 250, but transformers 4.57.3's
// MimiTransformerModel builds its mask with create_causal_mask, which ignores it;
// only its flash-attention path passes the window on. The official package on its
// default attention (sdpa or eager, the CPU's) is the reference here, so clips
// longer than 250 SEANet frames (10 s) attend to all of their past.
#include <cmath>
#include <numeric>

#include "backends/host_bytes.h"
#include "engine/models/hparams.h"
#include "engine/models/kv_cache.h"
#include "engine/tts/codec/codec_encoder.h"
#include "engine/tts/codec/codec_encoder_scratch.h"

namespace sluice::engine::tts {

using backends::DType;
using backends::Tensor;

namespace {

constexpr int64_t kBlockSize = 16;

}  // namespace

void CodecEncoder::run_transformer(const Tensor& x) {
  backends::Backend& be = *backend_;
  const CodecEncoderConfig& c = config_;
  const int64_t t = x.dim(0), h = c.hidden_size, hd = c.head_dim;
  const int64_t q_width = c.num_heads * hd, kv_width = c.num_kv_heads * hd;

  ModelHparams kv_shape;
  kv_shape.num_layers = c.num_layers;
  kv_shape.num_kv_heads = c.num_kv_heads;
  kv_shape.head_dim = hd;
  const int64_t blocks = (t + kBlockSize - 1) / kBlockSize;
  KvCache cache(be, kv_shape, KvCacheConfig{blocks, kBlockSize, DType::F32});

  CallBuffers call(be);
  const Tensor normed = call.f32({t, h}), branch = call.f32({t, h});
  const Tensor q = call.f32({t, q_width}), k = call.f32({t, kv_width}), v = call.f32({t, kv_width});
  const Tensor attn = call.f32({t, q_width}), wide = call.f32({t, c.intermediate_size});
  const Tensor positions = call.make(DType::I32, {t});
  std::vector<int32_t> index(static_cast<size_t>(t));
  std::iota(index.begin(), index.end(), 0);
  be.upload(positions, backends::host_bytes(index));  // frame p sits at position p and KV slot p

  backends::SequenceSlice sequence;
  sequence.num_queries = static_cast<int32_t>(t);
  sequence.block_table.resize(static_cast<size_t>(blocks));
  std::iota(sequence.block_table.begin(), sequence.block_table.end(), 0);
  be.begin_step({&sequence, 1}, t);

  backends::RopeParams rope;
  rope.num_rotated = static_cast<int>(hd);
  rope.theta = c.rope_theta;
  rope.neox = true;
  backends::AttentionParams params;
  params.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const Tensor q3 = q.reshape({t, c.num_heads, hd}), attn3 = attn.reshape({t, c.num_heads, hd});
  const Tensor k3 = k.reshape({t, c.num_kv_heads, hd}), v3 = v.reshape({t, c.num_kv_heads, hd});

  for (size_t i = 0; i < weights_.layers.size(); ++i) {
    const EncoderLayerWeights& l = weights_.layers[i];
    const backends::KvLayer& layer_cache = cache.layer(static_cast<int64_t>(i));
    be.layer_norm(x, l.attn_norm_w, l.attn_norm_b, c.norm_eps, normed);
    const Tensor qkv_w[] = {l.q, l.k, l.v};
    const Tensor qkv[] = {q, k, v};
    be.matmul_shared_input(normed, qkv_w, qkv);
    be.rope_write_kv(q3, k3, v3, positions, rope, layer_cache, positions);
    be.attention(q3, layer_cache, {&sequence, 1}, params, attn3);
    be.matmul(attn, l.o, branch);
    be.add(x, branch, x);
    be.layer_norm(x, l.mlp_norm_w, l.mlp_norm_b, c.norm_eps, normed);
    be.matmul(normed, l.fc1, wide);
    be.activate(wide, backends::Backend::Activation::gelu_erf, wide);
    be.matmul(wide, l.fc2, branch);
    be.add(x, branch, x);
  }
}

}  // namespace sluice::engine::tts
