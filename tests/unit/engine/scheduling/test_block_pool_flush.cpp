// BlockPool::flush_cached: every cached block no sequence holds leaves the prefix
// cache; held ones stay cached and findable.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "engine/scheduling/block_pool.h"
#include "engine/scheduling/kv_events.h"

namespace sluice::engine::unit_engine_scheduling_test_block_pool_flush {
namespace {

Sequence make_seq(int32_t first_token, int32_t count) {
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  std::iota(tokens.begin(), tokens.end(), first_token);
  auto params = std::make_shared<SamplingParams>();
  return Sequence("r", std::move(tokens), params);
}

void admit_and_compute(BlockPool& pool, Sequence& seq) {
  const CachedPrefix prefix = pool.find_cached_prefix(seq.tokens());
  REQUIRE(pool.allocate_slots(seq, seq.num_tokens() - prefix.num_cached_tokens, &prefix));
  seq.set_num_computed_tokens(seq.num_tokens());
  pool.cache_full_blocks(seq);
}

TEST_CASE("BlockPool: flush_cached drops the unheld cached blocks, keeps the held ones") {
  BlockPool pool({.num_blocks = 8, .block_size = 4});
  Sequence freed = make_seq(1, 9);   // 2 full blocks + 1 token
  Sequence held = make_seq(100, 9);  // 2 full blocks + 1 token, still running
  admit_and_compute(pool, freed);
  admit_and_compute(pool, held);
  pool.free(freed);
  REQUIRE(pool.num_cached_blocks() == 4);
  const int32_t num_free = pool.num_free_blocks();

  CHECK(pool.flush_cached() == 2);
  CHECK(pool.num_cached_blocks() == 2);
  CHECK(pool.num_free_blocks() == num_free);  // still free, only no longer findable
  CHECK(pool.find_cached_prefix(make_seq(1, 9).tokens()).num_cached_tokens == 0);
  CHECK(pool.find_cached_prefix(make_seq(100, 9).tokens()).num_cached_tokens == 8);
  for (int32_t id : pool.free_queue()) CHECK_FALSE(pool.is_cached(id));
  CHECK(pool.flush_cached() == 0);

  // Once the holder is gone its blocks go too; the pool still hands out every block.
  pool.free(held);
  CHECK(pool.flush_cached() == 2);
  CHECK(pool.num_cached_blocks() == 0);
  Sequence all = make_seq(500, 32);
  CHECK(pool.allocate_slots(all, 32));
  CHECK(pool.usage() == 1.0);
}

TEST_CASE("BlockPool: a flush tells KV-event subscribers which blocks left the cache") {
  BlockPool pool({.num_blocks = 8, .block_size = 4});
  std::vector<KvCacheEvent> log;
  pool.record_events(&log);
  Sequence freed = make_seq(1, 9);
  admit_and_compute(pool, freed);
  pool.free(freed);
  REQUIRE(log.size() == 2);  // AllBlocksCleared at attach, then the stored chain
  const std::vector<uint64_t> stored = std::get<KvBlockStored>(log[1]).block_hashes;
  log.clear();
  CHECK(pool.flush_cached() == 2);
  REQUIRE(log.size() == 1);
  const auto* removed = std::get_if<KvBlockRemoved>(&log[0]);
  REQUIRE(removed != nullptr);
  std::vector<uint64_t> hashes = removed->block_hashes;
  std::sort(hashes.begin(), hashes.end());
  std::vector<uint64_t> expected = stored;
  std::sort(expected.begin(), expected.end());
  CHECK(hashes == expected);
}

}  // namespace
}  // namespace sluice::engine
