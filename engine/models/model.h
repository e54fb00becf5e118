#pragma once
// A decoder-only text model (llama, qwen3, gemma3) bound to one Backend: runs the
// forward pass of one flattened step (prefill chunks and decode tokens of many
// sequences together) and returns logits for the rows that sample.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/weight_source.h"
#include "engine/models/architecture.h"
#include "engine/models/hparams.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model_weights.h"
#include "engine/models/workspace.h"

namespace sluice::engine {

struct OutputRows;  // transformer_block.h

// One step, on the host. T = token_ids.size(); the rows of a sequence are
// contiguous and described by its SequenceSlice (query_begin, num_queries,
// num_cached, block_table). All spans must stay valid during forward().
struct StepBatch {
  std::span<const int32_t> token_ids;   // [T]
  std::span<const int32_t> positions;   // [T] position of each token in its sequence
  std::span<const int32_t> kv_slots;    // [T] block * block_size + offset, where its K/V go
  std::span<const backends::SequenceSlice> sequences;
  std::span<const int32_t> logit_rows;  // [R] rows of T that need logits, in output order
  // [H] rows of T whose final normed hidden states are wanted (embeddings), in output
  // order; no logits are computed for them unless logit_rows asks too.
  std::span<const int32_t> hidden_rows;
};

// Owns the bound weights (and keeps their WeightSource alive) and the activation
// workspace. Not thread-safe: the engine thread of the model calls it, and the
// backend it was loaded on must outlive it.
class Model {
 public:
  // Checks every tensor's shape and dtype; throws loader::LoadError naming the
  // file and the tensor when the model cannot run on `backend`. quantize_to
  // (Q8_0 / Q4_0) quantizes F32/F16/BF16 matrices at load.
  static std::unique_ptr<Model> load(std::shared_ptr<const loader::WeightSource> source,
                                     backends::Backend& backend,
                                     std::optional<backends::DType> quantize_to = std::nullopt);

  const ModelHparams& hparams() const { return hparams_; }
  const Architecture& architecture() const { return arch_; }
  backends::Backend& backend() const { return backend_; }

  // Runs the step, writes its K/V into `cache` and fills `logits`
  // [logit_rows.size(), vocab_size] (row-major) with the logits of logit_rows, and
  // `hidden` [hidden_rows.size(), embedding_length] with the final normed hidden
  // states of hidden_rows (each row's own: what shares the step changes nothing).
  // A malformed batch (sizes that disagree, ids, slots or blocks out of range) is
  // a caller bug: SLUICE_CHECK stops the process before any kernel runs. Never
  // throws, and allocates nothing once the workspace fits the largest step.
  void forward(const StepBatch& batch, KvCache& cache, std::span<float> logits, std::span<float> hidden = {});

  // The same step, leaving the logits [logit_rows.size(), vocab_size] on the
  // backend for device-side sampling: the returned view is valid until the next
  // step (empty when no row samples). Without the final soft-cap, which forward()
  // applies on the host: callers check hparams().final_softcap first.
  backends::Tensor forward_on_device(const StepBatch& batch, KvCache& cache);

  // Allocates the activations of the largest step an engine will run (max_tokens
  // tokens, max_logit_rows sampling rows, padded as the backend records decode
  // steps) and caps the workspace's growth there. Throws OutOfMemoryError.
  void reserve_workspace(int64_t max_tokens, int64_t max_logit_rows);
  int64_t workspace_token_capacity() const { return workspace_.token_capacity(); }
  int64_t workspace_logit_capacity() const { return workspace_.logit_capacity(); }

 private:
  Model(std::shared_ptr<const loader::WeightSource> source, backends::Backend& backend,
        Architecture arch, ModelWeights weights);

  void check(const StepBatch& batch, const KvCache& cache) const;
  backends::Tensor final_logits(const StepBatch& batch, const Workspace::Views& views);
  void download_hidden_rows(const StepBatch& batch, const Workspace::Views& views, std::span<float> hidden);
  backends::Tensor run_step(const StepBatch& batch, KvCache& cache, std::span<float> hidden);
  static bool is_plain_decode(const StepBatch& batch);
  void begin_step(const Workspace::Views& views, std::span<const int32_t> ids, std::span<const int32_t> positions,
                  std::span<const int32_t> slots, std::span<const backends::SequenceSlice> sequences);
  Workspace::Views workspace_views(int64_t num_tokens, int64_t num_logit_rows);
  void run_layers(const Workspace::Views& views, std::span<const backends::SequenceSlice> sequences,
                  KvCache& cache, const OutputRows* output_rows = nullptr);
  backends::Tensor forward_recorded(const StepBatch& batch, KvCache& cache, int64_t rows);
  void apply_final_softcap(std::span<float> logits) const;

  std::shared_ptr<const loader::WeightSource> source_;  // owns the bytes weights_ points into
  backends::Backend& backend_;
  ModelHparams hparams_;
  Architecture arch_;
  ModelWeights weights_;
  Workspace workspace_;
  std::vector<int32_t> pad_ids_, pad_positions_, pad_slots_;  // a recorded step's padded inputs
};

}  // namespace sluice::engine
