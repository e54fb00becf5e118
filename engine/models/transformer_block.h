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

// The rows of a step whose final hidden state is read (the rows that produce logits),
// when that is fewer than all: the last layer still computes attention for every row
// (their K/V goes into the cache), then gathers these rows and runs only them through
// the attention's output projection and the MLP (llama.cpp prunes its output rows the
// same way). A prompt's rows before the last skip 1/L of the matmuls; a chunk that
// samples nothing skips them all. Each row's math is unchanged: the same bits.
struct OutputRows {
  backends::Tensor ids;     // [R] I32 rows of the step, R >= 0
  backends::Tensor hidden;  // [R, d] F32: their residual stream after the last layer
};

// All layers: views.hidden is the residual stream [T, d] on entry and, without
// output_rows, on exit (with them, output_rows->hidden holds the rows asked for, and
// views.hidden is left as the last layer's input).
// Each block's output is added back with the add fused into the next norm.
void transformer_layers(const StepContext& step, std::span<const LayerWeights> layers, KvCache& cache,
                        const OutputRows* output_rows = nullptr);

// All layers, sequence i's K/V in caches[i] (streams that own their cache, as the
// codec decoder's, decoded in one step): every matmul runs once over all rows, the
// RoPE/KV write and attention once per sequence on its rows.
void transformer_layers(const StepContext& step, std::span<const LayerWeights> layers,
                        std::span<KvCache* const> caches);

}  // namespace sluice::engine
