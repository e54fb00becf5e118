#include "engine/models/transformer_block.h"

#include <cmath>
#include <vector>

#include "backends/check.h"

namespace sluice::engine {

namespace {

// The KV cache one layer of a step reads: one the step's sequences share (the
// engine's paged pool), or one per sequence (codec streams own theirs), each with
// its sequence rebased to query row 0 for a call of its own.
struct LayerCaches {
  KvCache* shared = nullptr;
  std::span<KvCache* const> per_sequence;
  std::span<const backends::SequenceSlice> rebased;
};

// views.q/k/v = the step's q, k, v rows (head-normed where the architecture says).
void project_qkv(const StepContext& step, const LayerWeights& w) {
  backends::Backend& be = step.backend;
  const ModelHparams& h = step.hparams;
  const Workspace::Views& ws = step.views;
  const int64_t t = ws.hidden.dim(0);
  // ws.normed holds rms_norm(hidden) * attn_norm on entry.
  // q [T, heads*hd]; k, v [T, kv_heads*hd]: one op, so the input is read (and on
  // the CPU quantized) once.
  const backends::Tensor qkv_w[] = {w.attn_q, w.attn_k, w.attn_v};
  const backends::Tensor qkv[] = {ws.q, ws.k, ws.v};
  be.matmul_shared_input(ws.normed, qkv_w, qkv);
  if (step.arch.qk_norm) {
    // Each head's [hd] row on its own: q as [T*heads, hd], k as [T*kv_heads, hd].
    const backends::Tensor q_rows = ws.q.reshape({t * h.num_heads, h.head_dim});
    const backends::Tensor k_rows = ws.k.reshape({t * h.num_kv_heads, h.head_dim});
    be.rms_norm(q_rows, w.attn_q_norm, h.norm_eps, q_rows);
    be.rms_norm(k_rows, w.attn_k_norm, h.norm_eps, k_rows);
  }
}

// views.attn = attention over the cache for every row of the step, after this step's
// K/V rows are written into it. With one cache per sequence (caches.per_sequence),
// each sequence's rows go through its own cache, in a call of their own.
void attend(const StepContext& step, const LayerWeights& w, const LayerCaches& caches, int64_t layer_index) {
  backends::Backend& be = step.backend;
  const ModelHparams& h = step.hparams;
  const Workspace::Views& ws = step.views;
  const int64_t t = ws.hidden.dim(0);
  project_qkv(step, w);

  // Per-head views: q3 [T, heads, hd]; k3, v3 [T, kv_heads, hd].
  const backends::Tensor q3 = ws.q.reshape({t, h.num_heads, h.head_dim});
  const backends::Tensor k3 = ws.k.reshape({t, h.num_kv_heads, h.head_dim});
  const backends::Tensor v3 = ws.v.reshape({t, h.num_kv_heads, h.head_dim});
  const backends::Tensor attn3 = ws.attn.reshape({t, h.num_heads, h.head_dim});  // [T, heads, hd]
  const bool sliding = h.is_sliding_layer(layer_index);
  const backends::RopeParams& rope = sliding ? h.rope_local : h.rope;
  backends::AttentionParams params;
  params.scale = h.attention_scale > 0.0f ? h.attention_scale
                                          : 1.0f / std::sqrt(static_cast<float>(h.head_dim));
  params.sliding_window = sliding ? h.sliding_window : 0;
  params.softcap = h.attention_softcap;
  if (caches.per_sequence.empty()) {
    const backends::KvLayer& cache = caches.shared->layer(layer_index);
    be.rope_write_kv(q3, k3, v3, ws.positions, rope, cache, ws.kv_slots);
    be.attention(q3, cache, step.sequences, params, attn3);
    return;
  }
  for (size_t i = 0; i < step.sequences.size(); ++i) {
    const backends::SequenceSlice& seq = caches.rebased[i];  // query_begin 0
    const int64_t b = step.sequences[i].query_begin, n = seq.num_queries;
    const backends::KvLayer& cache = caches.per_sequence[i]->layer(layer_index);
    const backends::Tensor q = q3.slice(b, n);
    be.rope_write_kv(q, k3.slice(b, n), v3.slice(b, n), ws.positions.slice(b, n), rope, cache, ws.kv_slots.slice(b, n));
    be.attention(q, cache, {&seq, 1}, params, attn3.slice(b, n));
  }
}

// branch = attn_output(attn) [, post-normed], for any number of rows.
void project_attention(const StepContext& step, const LayerWeights& w, const backends::Tensor& attn,
                       const backends::Tensor& branch) {
  step.backend.matmul(attn, w.attn_output, branch);
  if (step.arch.post_norms) step.backend.rms_norm(branch, w.post_attn_norm, step.hparams.norm_eps, branch);
}

// branch = ffn_down(act(ffn_gate(normed)) * ffn_up(normed)) [, post-normed], for any
// number of rows; up and gate are scratch.
void mlp(const StepContext& step, const LayerWeights& w, const backends::Tensor& normed, const backends::Tensor& up,
         const backends::Tensor& gate, const backends::Tensor& branch) {
  backends::Backend& be = step.backend;
  be.gated_mlp(normed, w.ffn_gate, w.ffn_up, step.arch.gelu, up, gate);  // gate := act(gate) * up
  be.matmul(gate, w.ffn_down, branch);
  if (step.arch.post_norms) be.rms_norm(branch, w.post_ffw_norm, step.hparams.norm_eps, branch);
}

// The last layer when only some rows are read after it (OutputRows).
void last_layer_on_rows(const StepContext& step, const LayerWeights& w, const LayerCaches& cache,
                        int64_t layer_index, const OutputRows& out) {
  backends::Backend& be = step.backend;
  const Workspace::Views& ws = step.views;
  attend(step, w, cache, layer_index);  // every row: its K/V is written for later steps
  const int64_t r = out.ids.dim(0);
  if (r == 0) return;
  const backends::Tensor attn = ws.q.slice(0, r);  // q is spent once attention ran
  be.embed(ws.attn, out.ids, attn);
  be.embed(ws.hidden, out.ids, out.hidden);
  const backends::Tensor branch = ws.branch.slice(0, r);
  project_attention(step, w, attn, branch);
  const backends::Tensor normed = ws.normed.slice(0, r);
  be.add_rms_norm(out.hidden, branch, w.ffn_norm, step.hparams.norm_eps, normed);
  mlp(step, w, normed, ws.up.slice(0, r), ws.gate.slice(0, r), branch);
  be.add(out.hidden, branch, out.hidden);
}

// All layers over `caches` (the shared cache, or one per sequence).
void run_layers(const StepContext& step, std::span<const LayerWeights> layers, const LayerCaches& caches,
                const OutputRows* output_rows) {
  backends::Backend& be = step.backend;
  const Workspace::Views& ws = step.views;
  const float eps = step.hparams.norm_eps;
  // Each residual add is fused with the norm that reads its result next.
  be.rms_norm(ws.hidden, layers.front().attn_norm, eps, ws.normed);
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerWeights& w = layers[i];
    const auto index = static_cast<int64_t>(i);
    if (output_rows != nullptr && i + 1 == layers.size()) {
      last_layer_on_rows(step, w, caches, index, *output_rows);
      return;
    }
    attend(step, w, caches, index);
    project_attention(step, w, ws.attn, ws.branch);  // branch [T, d]
    be.add_rms_norm(ws.hidden, ws.branch, w.ffn_norm, eps, ws.normed);
    mlp(step, w, ws.normed, ws.up, ws.gate, ws.branch);  // branch [T, d]
    if (i + 1 < layers.size()) {
      be.add_rms_norm(ws.hidden, ws.branch, layers[i + 1].attn_norm, eps, ws.normed);
    } else {
      be.add(ws.hidden, ws.branch, ws.hidden);
    }
  }
}

}  // namespace

void transformer_layers(const StepContext& step, std::span<const LayerWeights> layers, KvCache& cache,
                        const OutputRows* output_rows) {
  run_layers(step, layers, LayerCaches{&cache, {}, {}}, output_rows);
}

void transformer_layers(const StepContext& step, std::span<const LayerWeights> layers,
                        std::span<KvCache* const> caches) {
  SLUICE_CHECK(caches.size() == step.sequences.size(), "transformer_layers: one cache per sequence");
  std::vector<backends::SequenceSlice> rebased(step.sequences.begin(), step.sequences.end());
  for (backends::SequenceSlice& seq : rebased) seq.query_begin = 0;
  run_layers(step, layers, LayerCaches{nullptr, caches, rebased}, nullptr);
}

}  // namespace sluice::engine
