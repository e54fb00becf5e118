#pragma once
// Each token of a scheduled step at its position and KV slot, worked out from the
// step's sequences (start, count, block table) the plain way, for tests to state
// what a step lays out. The scheduler hands over the sequences only; the batch
// builder computes the same arrays for the model.
#include <cstdint>
#include <vector>

#include "engine/scheduling/scheduler.h"

namespace sluice::engine::testing {

inline std::vector<int32_t> step_positions(const ScheduledStep& step) {
  std::vector<int32_t> positions;
  for (const ScheduledSequence& s : step.seqs)
    for (int64_t i = 0; i < s.num_new_tokens; ++i) positions.push_back(static_cast<int32_t>(s.start_position + i));
  return positions;
}

// block id * block_size + offset in the block
inline std::vector<int64_t> step_slots(const ScheduledStep& step, int64_t block_size) {
  std::vector<int64_t> slots;
  for (const ScheduledSequence& s : step.seqs) {
    for (int64_t i = 0; i < s.num_new_tokens; ++i) {
      const int64_t position = s.start_position + i;
      slots.push_back(s.block_table.at(static_cast<size_t>(position / block_size)) * block_size +
                      position % block_size);
    }
  }
  return slots;
}

}  // namespace sluice::engine::testing
