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

// hidden += attn_output(attention(rope(norm_qk(q)), rope(norm_qk(k)), v))  [, post-normed]
// Writes this step's K/V rows into `cache` at views.kv_slots first.
void attention_block(const StepContext& step, const LayerWeights& weights, const backends::KvLayer& cache,
                     int64_t layer_index);

// hidden += ffn_down(act(ffn_gate(norm(hidden))) * ffn_up(norm(hidden)))  [, post-normed]
void mlp_block(const StepContext& step, const LayerWeights& weights);

// One whole layer: attention_block then mlp_block.
void transformer_block(const StepContext& step, const LayerWeights& weights, const backends::KvLayer& cache,
                       int64_t layer_index);

}  // namespace sluice::engine
