#pragma once
// Runs one scheduled step on the model: describes the Scheduler's ScheduledStep to a
// BatchBuilder (each sequence's chunk, cached length and block table; the rows that
// score the prompt or sample) and returns the logits of those rows in step order.
// Decides nothing. Owns the paged KV cache of the model and reusable host buffers;
// engine thread only. The Model (and its backend) must outlive it.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "engine/models/batch_builder.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model.h"
#include "engine/scheduling/scheduler.h"

namespace sluice::engine {

// Rows of run()'s logits that score prompt tokens: row first_row + k predicts the
// prompt token at first_position + 1 + k of step.seqs[seq_index].
struct PromptLogitRows {
  size_t seq_index = 0;
  int64_t first_position = 0;
  size_t first_row = 0;
  size_t num_rows = 0;
};

// Rows of run()'s hidden states for an embedding sequence: row first_row + k is the
// final normed hidden state at prompt position first_position + k of
// step.seqs[seq_index] (last pooling: only the prompt's last position).
struct HiddenStateRows {
  size_t seq_index = 0;
  int64_t first_position = 0;
  size_t first_row = 0;
  size_t num_rows = 0;
};

class ModelRunner {
 public:
  // Allocates num_blocks KV blocks of block_size tokens. Throws std::invalid_argument
  // (from KvCache) for a non-positive size.
  ModelRunner(Model& model, int64_t num_blocks, int64_t block_size, backends::DType kv_dtype);

  // Logits [num rows, vocab_size] (row-major), valid until the next run(): per
  // sequence in step order, its prompt-scoring rows (Sequence::wants_prompt_logits,
  // see prompt_rows()) and then its sampling row; sample_rows() says which row each
  // sampling sequence got (a sequence with drafts gets 1 + draft_tokens.size()
  // consecutive rows from there). A row's logits depend only on its own sequence.
  std::span<const float> run(const ScheduledStep& step);
  const std::vector<size_t>& sample_rows() const { return sample_rows_; }
  const std::vector<PromptLogitRows>& prompt_rows() const { return prompt_rows_; }
  // Whether the step has prompt positions to score (then run() is the way: the
  // device sampler takes only sampling rows).
  static bool scores_prompt(const ScheduledStep& step);
  // Embedding sequences' rows of the last run(): [rows, embedding_length], row-major.
  const std::vector<HiddenStateRows>& hidden_rows() const { return hidden_rows_; }
  std::span<const float> hidden_states() const { return hidden_; }
  // Whether the step has embedding sequences (then run() is the way too).
  static bool embeds(const ScheduledStep& step);

  // Whether the backend samples on the device (then only the chosen tokens and
  // their log-probabilities come back, not the logits).
  bool samples_on_device() const;
  // Runs the step and samples one token per sampling sequence on the device, in
  // step order. Requires samples_on_device().
  void run_and_sample(const ScheduledStep& step, std::span<const backends::RowSampling> rows,
                      std::span<backends::SampledToken> out);

  int64_t vocab_size() const { return vocab_size_; }
  const KvCache& kv_cache() const { return *cache_; }
  Model& model() { return model_; }

 private:
  StepBatch prepare(const ScheduledStep& step, bool with_prompt_rows);

  Model& model_;
  std::unique_ptr<KvCache> cache_;
  int64_t vocab_size_ = 0;
  BatchBuilder builder_;                            // the step's host arrays
  std::vector<size_t> sample_rows_;                 // [num_sampling] rows of logits_
  std::vector<PromptLogitRows> prompt_rows_;
  std::vector<float> logits_;                       // [num rows, vocab_size]
  std::vector<HiddenStateRows> hidden_rows_;
  std::vector<float> hidden_;                       // [hidden rows, embedding_length]
};

}  // namespace sluice::engine
