#include "engine/models/batch_builder.h"

#include <stdexcept>
#include <string>

#include "backends/check.h"

namespace sluice::engine {

int64_t kv_slot(std::span<const int32_t> block_table, int64_t position, int64_t block_size) {
  return static_cast<int64_t>(block_table[static_cast<size_t>(position / block_size)]) * block_size +
         position % block_size;
}

BatchBuilder::BatchBuilder(int64_t block_size) : block_size_(block_size) {
  if (block_size <= 0) throw std::invalid_argument("BatchBuilder: block size " + std::to_string(block_size));
}

void BatchBuilder::clear() {
  token_ids_.clear();
  positions_.clear();
  kv_slots_.clear();
  num_sequences_ = 0;
  logit_rows_.clear();
  hidden_rows_.clear();
}

size_t BatchBuilder::add_sequence(std::span<const int32_t> tokens, int64_t num_cached,
                                  std::span<const int32_t> block_table) {
  const auto count = static_cast<int64_t>(tokens.size());
  SLUICE_CHECK(num_cached >= 0, "BatchBuilder: negative num_cached");
  SLUICE_CHECK(num_cached + count <= static_cast<int64_t>(block_table.size()) * block_size_,
               "BatchBuilder: the block table does not cover the chunk");
  if (num_sequences_ == slices_.size()) slices_.emplace_back();
  backends::SequenceSlice& slice = slices_[num_sequences_];
  slice.query_begin = static_cast<int32_t>(token_ids_.size());
  slice.num_queries = static_cast<int32_t>(count);
  slice.num_cached = static_cast<int32_t>(num_cached);
  slice.block_table.assign(block_table.begin(), block_table.end());
  token_ids_.insert(token_ids_.end(), tokens.begin(), tokens.end());
  for (int64_t position = num_cached; position < num_cached + count; ++position) {
    positions_.push_back(static_cast<int32_t>(position));
    kv_slots_.push_back(static_cast<int32_t>(kv_slot(block_table, position, block_size_)));
  }
  return num_sequences_++;
}

size_t BatchBuilder::add_logit_rows(size_t seq, int64_t first, int64_t count) {
  SLUICE_CHECK(seq < num_sequences_, "BatchBuilder: no such sequence");
  const backends::SequenceSlice& slice = slices_[seq];
  SLUICE_CHECK(first >= 0 && count >= 0 && first + count <= slice.num_queries,
               "BatchBuilder: logit rows outside the sequence's chunk");
  const size_t first_row = logit_rows_.size();
  for (int64_t i = first; i < first + count; ++i) logit_rows_.push_back(static_cast<int32_t>(slice.query_begin + i));
  return first_row;
}

size_t BatchBuilder::add_last_logit_row(size_t seq) {
  SLUICE_CHECK(seq < num_sequences_, "BatchBuilder: no such sequence");
  return add_logit_rows(seq, slices_[seq].num_queries - 1, 1);
}

size_t BatchBuilder::add_hidden_rows(size_t seq, int64_t first, int64_t count) {
  SLUICE_CHECK(seq < num_sequences_, "BatchBuilder: no such sequence");
  const backends::SequenceSlice& slice = slices_[seq];
  SLUICE_CHECK(first >= 0 && count >= 0 && first + count <= slice.num_queries,
               "BatchBuilder: hidden rows outside the sequence's chunk");
  const size_t first_row = hidden_rows_.size();
  for (int64_t i = first; i < first + count; ++i) hidden_rows_.push_back(static_cast<int32_t>(slice.query_begin + i));
  return first_row;
}

StepBatch BatchBuilder::batch() const {
  return StepBatch{.token_ids = token_ids_,
                   .positions = positions_,
                   .kv_slots = kv_slots_,
                   .sequences = std::span(slices_.data(), num_sequences_),
                   .logit_rows = logit_rows_,
                   .hidden_rows = hidden_rows_};
}

}  // namespace sluice::engine
