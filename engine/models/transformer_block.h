#pragma once
// The decoder block every architecture shares, written once against the Backend op
// set: pre-norm attention over the paged KV cache and a gated MLP, each added back
// into the residual stream, with the optional pieces (q/k head norms, post-branch
// norms, GeGLU) switched on by the architecture's weights and flags.
// Stateless functions; the caller's engine thread runs them.
#include <cstdint>
#include <span>

#include "backends/backend.h"
#include "engine/models/hparams.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model_weights.h"
#include "engine/models/workspace.h"

namespace sluice::engine {

// What every block of one step reads: the step's activations (views.hidden holds
// the residual stream [T, d] on entry and on exit) and its sequences.
struct StepContext {
  backends::Backend& backend;
  const ModelHparams& hparams;
  const Architecture& arch;
  const Workspace::Views& views;
  std::span<const backends::SequenceSlice> sequences;
};

// branch = attn_output(attention(rope(norm_qk(q)), rope(norm_qk(k)), v))  [, post-normed]
// from views.normed (the block's normed input). Writes this step's K/V rows into
// `cache` at views.kv_slots first.
void attention_block(const StepContext& step, const LayerWeights& weights, const backends::KvLayer& cache,
                     int64_t layer_index);

// branch = ffn_down(act(ffn_gate(normed)) * ffn_up(normed))  [, post-normed]
void mlp_block(const StepContext& step, const LayerWeights& weights);

// All layers: views.hidden is the residual stream [T, d] on entry and on exit.
// Each block's output is added back with the add fused into the next norm.
void transformer_layers(const StepContext& step, std::span<const LayerWeights> layers, KvCache& cache);

}  // namespace sluice::engine
