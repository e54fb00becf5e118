#pragma once
// Fills the host arrays of one model step (StepBatch): sequences appended one after
// another, each a chunk of its tokens at the positions after the ones it has cached,
// its K/V going to the slots its block table maps those positions to; then the rows
// that need logits. The one place these arrays are built: the engine's ModelRunner,
// `sluice bench` and the model tests all describe their steps here. Keeps its
// buffers from step to step (clear() frees nothing), so a steady engine allocates
// nothing per step. Not thread-safe.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "engine/models/model.h"

namespace sluice::engine {

// Where the K/V of the token at `position` go: block_table[position / block_size] *
// block_size + position % block_size. block_table must cover the position.
int64_t kv_slot(std::span<const int32_t> block_table, int64_t position, int64_t block_size);

class BatchBuilder {
 public:
  // Throws std::invalid_argument for a non-positive block size.
  explicit BatchBuilder(int64_t block_size);

  // Forgets the step, keeping the buffers for the next one.
  void clear();

  // Appends the chunk `tokens` of a sequence that already has num_cached tokens in
  // the cache: positions num_cached, num_cached + 1, ..., and their KV slots in
  // block_table, which must cover num_cached + tokens.size() positions (a caller bug
  // otherwise: SLUICE_CHECK). Returns the sequence's index in the step.
  size_t add_sequence(std::span<const int32_t> tokens, int64_t num_cached, std::span<const int32_t> block_table);

  // Asks for the logits of `count` consecutive tokens of sequence `seq`, from its
  // chunk's token `first`. Rows come out in the order they were asked for; returns
  // the row of the first.
  size_t add_logit_rows(size_t seq, int64_t first, int64_t count);
  // The logits of the chunk's last token: the ones that predict the sequence's next
  // token. Returns its row.
  size_t add_last_logit_row(size_t seq);
  // Asks for the final normed hidden states of `count` consecutive tokens of sequence
  // `seq` from its chunk's token `first` (embeddings). Returns the hidden row of the first.
  size_t add_hidden_rows(size_t seq, int64_t first, int64_t count);

  // Views of the buffers, valid until the next add_*() or clear().
  StepBatch batch() const;
  size_t num_tokens() const { return token_ids_.size(); }
  size_t num_sequences() const { return num_sequences_; }
  size_t num_logit_rows() const { return logit_rows_.size(); }
  size_t num_hidden_rows() const { return hidden_rows_.size(); }
  int64_t block_size() const { return block_size_; }

 private:
  int64_t block_size_;
  std::vector<int32_t> token_ids_;  // [T]
  std::vector<int32_t> positions_;  // [T]
  std::vector<int32_t> kv_slots_;   // [T]
  // [num_sequences_] in use; slices past it keep their block tables' capacity.
  std::vector<backends::SequenceSlice> slices_;
  size_t num_sequences_ = 0;
  std::vector<int32_t> logit_rows_;  // [R] rows of T
  std::vector<int32_t> hidden_rows_;  // [H] rows of T
};

}  // namespace sluice::engine
