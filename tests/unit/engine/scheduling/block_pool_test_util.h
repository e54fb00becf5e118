#pragma once
// Helpers of the BlockPool tests: sequences of known tokens, admitted and computed
// the way the scheduler does it.
#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "engine/scheduling/block_pool.h"

namespace sluice::engine::test {

inline std::vector<int32_t> iota_tokens(int32_t count, int32_t first = 1) {
  std::vector<int32_t> tokens(count);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

inline Sequence make_seq(std::vector<int32_t> tokens) {
  auto params = std::make_shared<SamplingParams>();
  params->seed = 1;
  return Sequence("r", std::move(tokens), params);
}

// Admits `seq` the way the scheduler does and marks all its tokens computed.
inline void admit_and_compute(BlockPool& pool, Sequence& seq) {
  const CachedPrefix prefix = pool.find_cached_prefix(seq.tokens());
  REQUIRE(pool.allocate_slots(seq, seq.num_tokens() - prefix.num_cached_tokens, &prefix));
  seq.set_num_computed_tokens(seq.num_tokens());
  pool.cache_full_blocks(seq);
}

}  // namespace sluice::engine::test
