// The block pool's KV-cache events (engine/scheduling/kv_events.h): what a router's index
// learns from them must match what the prefix cache really holds.
#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "engine/scheduling/block_pool.h"
#include "tests/unit/engine/scheduling/block_pool_test_util.h"

namespace sluice::engine::unit_engine_scheduling_test_block_pool_events {
namespace {

using test::admit_and_compute;
using test::iota_tokens;
using test::make_seq;

// The chained hashes of `tokens`' full blocks, computed independently of the pool.
std::vector<uint64_t> chain(const std::vector<int32_t>& tokens, int32_t block_size) {
  std::vector<uint64_t> hashes;
  uint64_t parent = kRootBlockHash;
  for (size_t i = 0; i + block_size <= tokens.size(); i += block_size) {
    parent = hash_block_tokens(parent, std::span(tokens).subspan(i, block_size));
    hashes.push_back(parent);
  }
  return hashes;
}

TEST_CASE("BlockPool events: attaching a log records AllBlocksCleared; none are recorded without one") {
  BlockPool quiet({.num_blocks = 4, .block_size = 4});
  Sequence a = make_seq(iota_tokens(9));
  admit_and_compute(quiet, a);  // no log: nothing to record into, nothing breaks
  CHECK(quiet.num_cached_blocks() == 2);

  BlockPool pool({.num_blocks = 4, .block_size = 4});
  std::vector<KvCacheEvent> log;
  pool.record_events(&log);
  REQUIRE(log.size() == 1);
  CHECK(std::holds_alternative<KvAllBlocksCleared>(log[0]));
}

TEST_CASE("BlockPool events: a prompt's full blocks are stored as one chain with their token ids") {
  BlockPool pool({.num_blocks = 8, .block_size = 4});
  std::vector<KvCacheEvent> log;
  pool.record_events(&log);
  log.clear();

  const std::vector<int32_t> tokens = iota_tokens(11, 100);  // 2 full blocks + 3 tokens
  Sequence seq = make_seq(tokens);
  admit_and_compute(pool, seq);
  REQUIRE(log.size() == 1);
  const auto& stored = std::get<KvBlockStored>(log[0]);
  CHECK(stored.block_hashes == chain(tokens, 4));
  CHECK_FALSE(stored.parent_block_hash.has_value());  // the prompt's first block
  CHECK(stored.token_ids == std::vector<int32_t>(tokens.begin(), tokens.begin() + 8));
  CHECK(stored.block_size == 4);

  // Decoding fills the third block: a new event whose parent is the second block.
  log.clear();
  seq.append_token(500);
  REQUIRE(pool.allocate_slots(seq, 1));
  seq.set_num_computed_tokens(seq.num_tokens());
  pool.cache_full_blocks(seq);
  REQUIRE(log.size() == 1);
  const auto& third = std::get<KvBlockStored>(log[0]);
  std::vector<int32_t> all = tokens;
  all.push_back(500);
  REQUIRE(third.block_hashes.size() == 1);
  CHECK(third.block_hashes[0] == chain(all, 4)[2]);
  CHECK(third.parent_block_hash == std::optional<uint64_t>(chain(all, 4)[1]));
  CHECK(third.token_ids == std::vector<int32_t>{108, 109, 110, 500});
}

TEST_CASE("BlockPool events: a prefix hit stores only the blocks after the shared ones") {
  BlockPool pool({.num_blocks = 8, .block_size = 4});
  std::vector<KvCacheEvent> log;
  pool.record_events(&log);
  Sequence a = make_seq(iota_tokens(9));
  admit_and_compute(pool, a);
  log.clear();

  std::vector<int32_t> tokens = iota_tokens(8);
  for (int32_t t : {70, 71, 72, 73, 74}) tokens.push_back(t);
  Sequence b = make_seq(tokens);
  admit_and_compute(pool, b);
  REQUIRE(log.size() == 1);
  const auto& stored = std::get<KvBlockStored>(log[0]);
  CHECK(stored.block_hashes == std::vector<uint64_t>{chain(tokens, 4)[2]});
  CHECK(stored.parent_block_hash == std::optional<uint64_t>(chain(tokens, 4)[1]));
  CHECK(stored.token_ids == std::vector<int32_t>{70, 71, 72, 73});
}

TEST_CASE("BlockPool events: evicting cached blocks records them removed, and only them") {
  BlockPool pool({.num_blocks = 4, .block_size = 4});
  std::vector<KvCacheEvent> log;
  pool.record_events(&log);
  const std::vector<int32_t> tokens = iota_tokens(9);  // blocks: 2 cached + 1 partial
  Sequence a = make_seq(tokens);
  admit_and_compute(pool, a);
  pool.free(a);
  log.clear();

  // Four fresh blocks: the never-cached ones go first (no event), then a's cached
  // blocks, tail first.
  Sequence b = make_seq(iota_tokens(14, 1000));
  REQUIRE(pool.allocate_slots(b, 14, nullptr));
  REQUIRE(log.size() == 1);
  const auto& removed = std::get<KvBlockRemoved>(log[0]);
  const std::vector<uint64_t> hashes = chain(tokens, 4);
  CHECK(removed.block_hashes == std::vector<uint64_t>{hashes[1], hashes[0]});
  CHECK(pool.num_cached_blocks() == 0);

  // Every stored hash a subscriber saw is removed again: its index ends empty.
  b.set_num_computed_tokens(14);
  pool.cache_full_blocks(b);
  pool.free(b);
  Sequence c = make_seq(iota_tokens(16, 5000));
  log.clear();
  REQUIRE(pool.allocate_slots(c, 16, nullptr));
  REQUIRE(log.size() == 1);
  CHECK(std::get<KvBlockRemoved>(log[0]).block_hashes.size() == 3);
}

TEST_CASE("BlockPool events: prefix caching off records nothing after the clear") {
  BlockPool pool({.num_blocks = 4, .block_size = 4, .enable_prefix_caching = false});
  std::vector<KvCacheEvent> log;
  pool.record_events(&log);
  log.clear();
  Sequence a = make_seq(iota_tokens(9));
  admit_and_compute(pool, a);
  pool.free(a);
  Sequence b = make_seq(iota_tokens(16, 100));
  REQUIRE(pool.allocate_slots(b, 16, nullptr));
  CHECK(log.empty());
}

}  // namespace
}  // namespace sluice::engine
