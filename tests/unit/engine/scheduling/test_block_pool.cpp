#include "engine/scheduling/block_pool.h"
#include "tests/unit/engine/scheduling/block_pool_test_util.h"

#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <vector>

namespace sluice::engine::unit_engine_scheduling_test_block_pool {
namespace {

using test::admit_and_compute;
using test::iota_tokens;
using test::make_seq;

// A deliberately weak hash: token values are taken mod 100, so blocks differing only
// by multiples of 100 collide under the same parent.
uint64_t mod100_hash(uint64_t parent, std::span<const int32_t> tokens) {
  std::vector<int32_t> reduced(tokens.begin(), tokens.end());
  for (int32_t& t : reduced) t %= 100;
  return hash_block_tokens(parent, reduced);
}

uint64_t constant_hash(uint64_t, std::span<const int32_t>) { return 42; }

TEST_CASE("BlockPool: allocation, ref counts, usage and free") {
  BlockPool pool({.num_blocks = 8, .block_size = 4});
  CHECK(pool.usage() == 0.0);
  CHECK(pool.num_free_blocks() == 8);

  Sequence seq = make_seq(iota_tokens(10));
  const CachedPrefix prefix = pool.find_cached_prefix(seq.tokens());
  CHECK(prefix.num_cached_tokens == 0);
  REQUIRE(pool.allocate_slots(seq, 10, &prefix));
  REQUIRE(seq.block_table().size() == 3);  // ceil(10 / 4)
  for (int32_t id : seq.block_table()) CHECK(pool.ref_count(id) == 1);
  CHECK(pool.usage() == doctest::Approx(3.0 / 8));

  // Growing within the last block needs nothing; crossing into a fifth block does.
  seq.set_num_computed_tokens(10);
  REQUIRE(pool.allocate_slots(seq, 2));
  CHECK(seq.block_table().size() == 3);
  REQUIRE(pool.allocate_slots(seq, 3));
  CHECK(seq.block_table().size() == 4);

  pool.free(seq);
  CHECK(seq.block_table().empty());
  CHECK(seq.num_computed_tokens() == 0);
  CHECK(pool.usage() == 0.0);
  CHECK(pool.num_free_blocks() == 8);
}

TEST_CASE("BlockPool: a failed allocation changes nothing") {
  BlockPool pool({.num_blocks = 4, .block_size = 4});
  Sequence a = make_seq(iota_tokens(12));
  Sequence b = make_seq(iota_tokens(8, 100));
  REQUIRE(pool.allocate_slots(a, 12));
  CHECK_FALSE(pool.allocate_slots(b, 8));
  CHECK(b.block_table().empty());
  CHECK(pool.num_free_blocks() == 1);
  CHECK(pool.allocate_slots(b, 4));
}

TEST_CASE("BlockPool: prefix hit shares blocks and never covers the last token") {
  BlockPool pool({.num_blocks = 16, .block_size = 4});
  Sequence a = make_seq(iota_tokens(12));
  admit_and_compute(pool, a);
  CHECK(pool.num_cached_blocks() == 3);
  CHECK(pool.num_prefix_cache_queries() == 12);
  CHECK(pool.num_prefix_cache_hits() == 0);

  // Same 12 tokens: only 2 blocks may be reused, the last token is computed again.
  Sequence same = make_seq(iota_tokens(12));
  const CachedPrefix p_same = pool.find_cached_prefix(same.tokens());
  CHECK(p_same.num_cached_tokens == 8);
  CHECK(p_same.blocks == std::vector<int32_t>(a.block_table().begin(), a.block_table().begin() + 2));

  // One token longer: all 3 full blocks hit, shared by reference.
  auto tokens = iota_tokens(13);
  Sequence b = make_seq(tokens);
  const CachedPrefix p = pool.find_cached_prefix(b.tokens());
  CHECK(p.num_cached_tokens == 12);
  REQUIRE(pool.allocate_slots(b, 1, &p));
  CHECK(b.num_computed_tokens() == 12);
  REQUIRE(b.block_table().size() == 4);
  for (int i = 0; i < 3; ++i) {
    CHECK(b.block_table()[i] == a.block_table()[i]);
    CHECK(pool.ref_count(a.block_table()[i]) == 2);
  }
  CHECK(pool.ref_count(b.block_table()[3]) == 1);
  CHECK(pool.num_prefix_cache_queries() == 12 + 13);
  CHECK(pool.num_prefix_cache_hits() == 12);
  CHECK(pool.usage() == doctest::Approx(4.0 / 16));
}

TEST_CASE("BlockPool: freed cached blocks stay findable until evicted") {
  BlockPool pool({.num_blocks = 4, .block_size = 2});
  Sequence a = make_seq(iota_tokens(4));  // blocks [1 2][3 4]
  admit_and_compute(pool, a);
  const std::vector<int32_t> a_blocks = a.block_table();
  pool.free(a);
  CHECK(pool.usage() == 0.0);
  CHECK(pool.num_cached_blocks() == 2);

  Sequence again = make_seq(iota_tokens(5));
  const CachedPrefix p = pool.find_cached_prefix(again.tokens());
  CHECK(p.blocks == a_blocks);
  REQUIRE(pool.allocate_slots(again, 1, &p));
  CHECK(pool.num_free_blocks() == 1);  // 2 revived from the free queue, 1 fresh
  CHECK(pool.ref_count(a_blocks[0]) == 1);
}

TEST_CASE("BlockPool: the hash chain keys a block by its whole prefix") {
  CHECK(hash_block_tokens(kRootBlockHash, std::vector<int32_t>{1, 2}) !=
        hash_block_tokens(kRootBlockHash, std::vector<int32_t>{2, 1}));
  CHECK(hash_block_tokens(1, std::vector<int32_t>{1, 2}) != hash_block_tokens(2, std::vector<int32_t>{1, 2}));
  CHECK(hash_block_tokens(kRootBlockHash, std::vector<int32_t>{0, 0}) !=
        hash_block_tokens(kRootBlockHash, std::vector<int32_t>{0, 0, 0}));

  BlockPool pool({.num_blocks = 16, .block_size = 2});
  Sequence a = make_seq({1, 2, 3, 4, 5});
  admit_and_compute(pool, a);
  // The same second block under another first block is a different prefix.
  Sequence b = make_seq({9, 9, 3, 4, 5});
  CHECK(pool.find_cached_prefix(b.tokens()).num_cached_tokens == 0);
  Sequence c = make_seq({1, 2, 7, 7, 5});
  CHECK(pool.find_cached_prefix(c.tokens()).num_cached_tokens == 2);
}

TEST_CASE("BlockPool: a forced hash collision never hits") {
  BlockPool pool({.num_blocks = 16, .block_size = 2}, constant_hash);
  Sequence a = make_seq({1, 2, 3, 4, 5});
  admit_and_compute(pool, a);
  Sequence other = make_seq({7, 8, 3, 4, 5});  // same hash for every block
  CHECK(pool.find_cached_prefix(other.tokens()).num_cached_tokens == 0);
  Sequence same = make_seq({1, 2, 3, 4, 5});
  CHECK(pool.find_cached_prefix(same.tokens()).num_cached_tokens == 2);  // block 0 only: 1 entry per hash
}

TEST_CASE("BlockPool: a collision deeper in the chain does not poison the blocks after it") {
  // t = [1 2][3 100] and u = [1 2][3 200] collide at block 1 under mod100_hash.
  BlockPool pool({.num_blocks = 16, .block_size = 2}, mod100_hash);
  Sequence t = make_seq({1, 2, 3, 100, 9});
  admit_and_compute(pool, t);
  Sequence u = make_seq({1, 2, 3, 200, 5, 6, 9});
  admit_and_compute(pool, u);
  CHECK(u.block_table()[0] == t.block_table()[0]);    // [1 2] shared
  CHECK_FALSE(pool.is_cached(u.block_table()[1]));     // collided: left out
  CHECK_FALSE(pool.is_cached(u.block_table()[2]));     // its prefix has no entry: left out

  // [1 2][3 100][5 6] must not reuse u's [5 6], whose KV saw 200, not 100.
  Sequence v = make_seq({1, 2, 3, 100, 5, 6, 9});
  const CachedPrefix p = pool.find_cached_prefix(v.tokens());
  CHECK(p.num_cached_tokens == 4);
  CHECK(p.blocks == std::vector<int32_t>{t.block_table()[0], t.block_table()[1]});
}

TEST_CASE("BlockPool: eviction is LRU, tail blocks first, uncached blocks before cached") {
  BlockPool pool({.num_blocks = 6, .block_size = 2});
  Sequence a = make_seq({1, 2, 3, 4, 5});  // 2 full cached blocks + 1 partial
  Sequence b = make_seq({11, 12, 13, 14, 15});
  admit_and_compute(pool, a);
  admit_and_compute(pool, b);
  const auto ta = a.block_table();
  const auto tb = b.block_table();
  REQUIRE(pool.num_free_blocks() == 0);
  pool.free(a);
  pool.free(b);
  // Partial (uncached) blocks go to the front; cached ones queue in free order,
  // each sequence's tail before its head.
  CHECK(pool.free_queue() == std::vector<int32_t>{tb[2], ta[2], ta[1], ta[0], tb[1], tb[0]});

  // Three fresh blocks: the two worthless ones, then a's tail block is evicted.
  Sequence c = make_seq({21, 22, 23, 24, 25, 26});
  REQUIRE(pool.allocate_slots(c, 6));
  CHECK(c.block_table() == std::vector<int32_t>{tb[2], ta[2], ta[1]});
  CHECK_FALSE(pool.is_cached(ta[1]));
  CHECK(pool.is_cached(ta[0]));
  CHECK(pool.find_cached_prefix(std::vector<int32_t>{1, 2, 3, 4, 5}).num_cached_tokens == 2);
  CHECK(pool.find_cached_prefix(std::vector<int32_t>{11, 12, 13, 14, 15}).num_cached_tokens == 4);
}

TEST_CASE("BlockPool: with prefix caching off nothing is cached or counted") {
  BlockPool pool({.num_blocks = 8, .block_size = 2, .enable_prefix_caching = false});
  Sequence a = make_seq({1, 2, 3, 4, 5});
  admit_and_compute(pool, a);
  CHECK(pool.num_cached_blocks() == 0);
  CHECK(pool.find_cached_prefix(a.tokens()).num_cached_tokens == 0);
  CHECK(pool.num_prefix_cache_queries() == 0);
}

}  // namespace
}  // namespace sluice::engine
