#include "engine/models/transformer_block.h"

#include <cmath>

namespace sluice::engine {

void attention_block(const StepContext& step, const LayerWeights& w, const backends::KvLayer& cache,
                     int64_t layer_index) {
  backends::Backend& be = step.backend;
  const ModelHparams& h = step.hparams;
  const Workspace::Views& ws = step.views;
  const int64_t t = ws.hidden.dim(0);
  const float eps = h.norm_eps;

  // ws.normed holds rms_norm(hidden) * attn_norm on entry.
  // q [T, heads*hd]; k, v [T, kv_heads*hd]: one op, so the input is read (and on
  // the CPU quantized) once.
  const backends::Tensor qkv_w[] = {w.attn_q, w.attn_k, w.attn_v};
  const backends::Tensor qkv[] = {ws.q, ws.k, ws.v};
  be.matmul_shared_input(ws.normed, qkv_w, qkv);

  // Per-head views: q3 [T, heads, hd]; k3, v3 [T, kv_heads, hd].
  const backends::Tensor q3 = ws.q.reshape({t, h.num_heads, h.head_dim});
  const backends::Tensor k3 = ws.k.reshape({t, h.num_kv_heads, h.head_dim});
  const backends::Tensor v3 = ws.v.reshape({t, h.num_kv_heads, h.head_dim});
  if (step.arch.qk_norm) {
    // Each head's [hd] row on its own: q as [T*heads, hd], k as [T*kv_heads, hd].
    const backends::Tensor q_rows = ws.q.reshape({t * h.num_heads, h.head_dim});
    const backends::Tensor k_rows = ws.k.reshape({t * h.num_kv_heads, h.head_dim});
    be.rms_norm(q_rows, w.attn_q_norm, eps, q_rows);
    be.rms_norm(k_rows, w.attn_k_norm, eps, k_rows);
  }
  const bool sliding = h.is_sliding_layer(layer_index);
  be.rope_write_kv(q3, k3, v3, ws.positions, sliding ? h.rope_local : h.rope, cache, ws.kv_slots);

  backends::AttentionParams params;
  params.scale = h.attention_scale > 0.0f ? h.attention_scale
                                          : 1.0f / std::sqrt(static_cast<float>(h.head_dim));
  params.sliding_window = sliding ? h.sliding_window : 0;
  params.softcap = h.attention_softcap;
  const backends::Tensor attn3 = ws.attn.reshape({t, h.num_heads, h.head_dim});  // [T, heads, hd]
  be.attention(q3, cache, step.sequences, params, attn3);

  be.matmul(ws.attn, w.attn_output, ws.branch);  // branch [T, d]
  if (step.arch.post_norms) be.rms_norm(ws.branch, w.post_attn_norm, eps, ws.branch);
}

void mlp_block(const StepContext& step, const LayerWeights& w) {
  backends::Backend& be = step.backend;
  const Workspace::Views& ws = step.views;
  const float eps = step.hparams.norm_eps;

  // ws.normed holds rms_norm(hidden) * ffn_norm on entry; gate := act(gate) * up.
  be.gated_mlp(ws.normed, w.ffn_gate, w.ffn_up, step.arch.gelu, ws.up, ws.gate);  // gate [T, f]
  be.matmul(ws.gate, w.ffn_down, ws.branch);                                       // branch [T, d]
  if (step.arch.post_norms) be.rms_norm(ws.branch, w.post_ffw_norm, eps, ws.branch);
}

void transformer_layers(const StepContext& step, std::span<const LayerWeights> layers, KvCache& cache) {
  backends::Backend& be = step.backend;
  const Workspace::Views& ws = step.views;
  const float eps = step.hparams.norm_eps;
  // Each residual add is fused with the norm that reads its result next.
  be.rms_norm(ws.hidden, layers.front().attn_norm, eps, ws.normed);
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerWeights& w = layers[i];
    attention_block(step, w, cache.layer(static_cast<int64_t>(i)), static_cast<int64_t>(i));
    be.add_rms_norm(ws.hidden, ws.branch, w.ffn_norm, eps, ws.normed);
    mlp_block(step, w);
    if (i + 1 < layers.size()) {
      be.add_rms_norm(ws.hidden, ws.branch, layers[i + 1].attn_norm, eps, ws.normed);
    } else {
      be.add(ws.hidden, ws.branch, ws.hidden);
    }
  }
}

}  // namespace sluice::engine
