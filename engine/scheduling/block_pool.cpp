#include "engine/scheduling/block_pool.h"

#include <algorithm>
#include <bit>

#include "backends/check.h"

namespace sluice::engine {
namespace {

// murmur3's 64-bit finaliser: a bijection with full avalanche.
uint64_t fmix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace

uint64_t hash_block_tokens(uint64_t parent_hash, std::span<const int32_t> tokens) {
  uint64_t h = fmix64(parent_hash ^ 0x9E3779B97F4A7C15ull);
  uint64_t position = 0;
  for (int32_t token : tokens) {
    const uint64_t word = (static_cast<uint64_t>(static_cast<uint32_t>(token)) << 20) ^ ++position;
    h ^= fmix64(word * 0x9FB21C651E98DF25ull);
    h = std::rotl(h, 29) * 0xD6E8FEB86659FD93ull + 0x2545F4914F6CDD1Dull;
  }
  return fmix64(h ^ tokens.size());
}

BlockPool::BlockPool(BlockPoolConfig config, BlockHashFn hash)
    : config_(config), hash_(hash), blocks_(static_cast<size_t>(config.num_blocks) + 1) {
  SLUICE_CHECK(config_.num_blocks > 0 && config_.block_size > 0, "BlockPool needs blocks");
  const int32_t sentinel = config_.num_blocks;
  blocks_[sentinel].prev = blocks_[sentinel].next = sentinel;
  for (int32_t id = 0; id < config_.num_blocks; ++id) push_back(id);
}

int64_t BlockPool::num_blocks_for(int64_t num_tokens) const {
  return (num_tokens + config_.block_size - 1) / config_.block_size;
}

double BlockPool::usage() const {
  return 1.0 - static_cast<double>(num_free_) / static_cast<double>(config_.num_blocks);
}

std::vector<int32_t> BlockPool::free_queue() const {
  std::vector<int32_t> order;
  const int32_t sentinel = config_.num_blocks;
  for (int32_t id = blocks_[sentinel].next; id != sentinel; id = blocks_[id].next) order.push_back(id);
  return order;
}

std::span<const int32_t> BlockPool::block_tokens(std::span<const int32_t> tokens, int64_t index) const {
  return tokens.subspan(static_cast<size_t>(index) * config_.block_size, config_.block_size);
}

bool BlockPool::holds(const Block& block, uint64_t parent_cache_id, std::span<const int32_t> tokens) const {
  return block.parent_cache_id == parent_cache_id && std::ranges::equal(block.tokens, tokens);
}

CachedPrefix BlockPool::find_cached_prefix(std::span<const int32_t> tokens) const {
  CachedPrefix prefix;
  if (!config_.enable_prefix_caching || tokens.empty()) return prefix;
  const int64_t max_blocks = (static_cast<int64_t>(tokens.size()) - 1) / config_.block_size;
  uint64_t parent_hash = kRootBlockHash;
  uint64_t parent_id = 0;
  for (int64_t i = 0; i < max_blocks; ++i) {
    const auto span = block_tokens(tokens, i);
    const uint64_t h = hash_(parent_hash, span);
    const auto it = cached_.find(h);
    if (it == cached_.end() || !holds(blocks_[it->second], parent_id, span)) break;
    const Block& block = blocks_[it->second];
    prefix.blocks.push_back(it->second);
    prefix.keys.push_back({h, block.cache_id});
    parent_hash = h;
    parent_id = block.cache_id;
  }
  prefix.num_cached_tokens = static_cast<int64_t>(prefix.blocks.size()) * config_.block_size;
  return prefix;
}

bool BlockPool::allocate_slots(Sequence& seq, int64_t num_new_tokens, const CachedPrefix* prefix) {
  SLUICE_CHECK(num_new_tokens >= 0, "negative token count");
  SLUICE_CHECK(!prefix || seq.block_table().empty(), "a prefix is for a sequence without blocks");
  const int64_t num_computed = prefix ? prefix->num_cached_tokens : seq.num_computed_tokens();
  const int64_t num_have = prefix ? static_cast<int64_t>(prefix->blocks.size())
                                  : static_cast<int64_t>(seq.block_table().size());
  const int64_t num_new_blocks = std::max<int64_t>(0, num_blocks_for(num_computed + num_new_tokens) - num_have);
  int64_t num_revived = 0;  // prefix blocks now in the free queue: they stop being free
  if (prefix) {
    for (int32_t id : prefix->blocks) num_revived += blocks_[id].ref_count == 0;
  }
  if (num_new_blocks + num_revived > num_free_) return false;

  auto& table = seq.mutable_block_table();
  if (prefix) {
    for (int32_t id : prefix->blocks) {
      touch(id);
      table.push_back(id);
    }
    seq.mutable_block_keys() = prefix->keys;
    seq.set_num_computed_tokens(prefix->num_cached_tokens);
    if (config_.enable_prefix_caching) {
      num_queries_ += static_cast<uint64_t>(seq.num_tokens());
      num_hits_ += static_cast<uint64_t>(prefix->num_cached_tokens);
    }
  }
  for (int64_t i = 0; i < num_new_blocks; ++i) {
    const int32_t id = take_fresh();
    blocks_[id].ref_count = 1;
    table.push_back(id);
  }
  return true;
}

void BlockPool::free(Sequence& seq) {
  auto& table = seq.mutable_block_table();
  for (auto it = table.rbegin(); it != table.rend(); ++it) {
    Block& block = blocks_[*it];
    SLUICE_CHECK(block.ref_count > 0, "freeing a free block");
    if (--block.ref_count > 0) continue;
    if (block.cache_id != 0) {
      push_back(*it);
    } else {
      push_front(*it);
    }
  }
  table.clear();
  seq.mutable_block_keys().clear();
  seq.set_num_computed_tokens(0);
}

void BlockPool::free_tail(Sequence& seq, int64_t num_tokens) {
  auto& table = seq.mutable_block_table();
  const auto keep = static_cast<size_t>(num_blocks_for(num_tokens));
  SLUICE_CHECK(keep >= seq.block_keys().size(), "free_tail would drop a cached block");
  while (table.size() > keep) {
    Block& block = blocks_[table.back()];
    SLUICE_CHECK(block.ref_count == 1 && block.cache_id == 0, "a draft block is shared or cached");
    block.ref_count = 0;
    push_front(table.back());  // never held a cached prefix: reused first
    table.pop_back();
  }
}

void BlockPool::cache_full_blocks(Sequence& seq) {
  if (!config_.enable_prefix_caching) return;
  const auto tokens = seq.tokens();
  const auto& table = seq.block_table();
  auto& keys = seq.mutable_block_keys();
  const int64_t num_full = std::min({seq.num_computed_tokens() / config_.block_size,
                                     static_cast<int64_t>(table.size()), seq.cacheable_tokens() / config_.block_size});
  for (auto j = static_cast<int64_t>(keys.size()); j < num_full; ++j) {
    const uint64_t parent_hash = j ? keys[j - 1].hash : kRootBlockHash;
    const uint64_t parent_id = j ? keys[j - 1].cache_id : 0;
    const auto span = block_tokens(tokens, j);
    const uint64_t h = hash_(parent_hash, span);
    if (j > 0 && parent_id == 0) {  // no exact entry for the prefix: nothing below it either
      keys.push_back({h, 0});
      continue;
    }
    Block& block = blocks_[table[j]];
    if (block.cache_id != 0) {  // already an entry (shared from the cache)
      keys.push_back({h, block.cache_id});
      continue;
    }
    const auto it = cached_.find(h);
    if (it == cached_.end()) {
      block.hash = h;
      block.cache_id = next_cache_id_++;
      block.parent_cache_id = parent_id;
      block.tokens.assign(span.begin(), span.end());
      cached_.emplace(h, table[j]);
      keys.push_back({h, block.cache_id});
      if (events_ != nullptr) record_stored(j ? std::optional(keys[j - 1].hash) : std::nullopt, h, span);
    } else if (holds(blocks_[it->second], parent_id, span)) {
      // Same prefix computed twice (admitted together): the first entry represents it.
      keys.push_back({h, blocks_[it->second].cache_id});
    } else {
      keys.push_back({h, 0});  // a hash collision: leave this prefix uncached
    }
  }
}

void BlockPool::push_front(int32_t id) {
  const int32_t sentinel = config_.num_blocks;
  const int32_t first = blocks_[sentinel].next;
  blocks_[id].prev = sentinel;
  blocks_[id].next = first;
  blocks_[first].prev = id;
  blocks_[sentinel].next = id;
  ++num_free_;
}

void BlockPool::push_back(int32_t id) {
  const int32_t sentinel = config_.num_blocks;
  const int32_t last = blocks_[sentinel].prev;
  blocks_[id].prev = last;
  blocks_[id].next = sentinel;
  blocks_[last].next = id;
  blocks_[sentinel].prev = id;
  ++num_free_;
}

void BlockPool::unlink(int32_t id) {
  Block& block = blocks_[id];
  SLUICE_CHECK(block.prev >= 0 && block.next >= 0, "block is not in the free queue");
  blocks_[block.prev].next = block.next;
  blocks_[block.next].prev = block.prev;
  block.prev = block.next = -1;
  --num_free_;
}

void BlockPool::touch(int32_t id) {
  if (blocks_[id].ref_count == 0) unlink(id);
  ++blocks_[id].ref_count;
}

int32_t BlockPool::take_fresh() {
  const int32_t id = blocks_[config_.num_blocks].next;
  SLUICE_CHECK(id != config_.num_blocks, "take_fresh on an empty free queue");
  unlink(id);
  if (blocks_[id].cache_id != 0) uncache(id);
  return id;
}

int32_t BlockPool::flush_cached() {
  int32_t num_dropped = 0;
  for (int32_t id = 0; id < config_.num_blocks; ++id) {
    Block& block = blocks_[id];
    if (block.cache_id == 0 || block.ref_count > 0) continue;
    uncache(id);  // a subscriber of the KV events hears BlockRemoved
    // Uncached free blocks are reused before cached ones: move it to the front.
    unlink(id);
    push_front(id);
    ++num_dropped;
  }
  return num_dropped;
}

void BlockPool::uncache(int32_t id) {
  Block& block = blocks_[id];
  const auto it = cached_.find(block.hash);
  if (it != cached_.end() && it->second == id) {
    cached_.erase(it);
    if (events_ != nullptr) {
      // Evictions of one step usually come in a run: one event lists them all.
      auto* removed = events_->empty() ? nullptr : std::get_if<KvBlockRemoved>(&events_->back());
      if (removed == nullptr) removed = &std::get<KvBlockRemoved>(events_->emplace_back(KvBlockRemoved{}));
      removed->block_hashes.push_back(block.hash);
    }
  }
  block.cache_id = 0;
  block.parent_cache_id = 0;
  block.tokens.clear();
}

void BlockPool::record_events(std::vector<KvCacheEvent>* log) {
  events_ = log;
  if (events_ != nullptr) events_->emplace_back(KvAllBlocksCleared{});
}

// A block that continues the chain of the previous event (its parent is that
// event's last block) joins it, as vLLM sends a prompt's new blocks in one event.
void BlockPool::record_stored(std::optional<uint64_t> parent_hash, uint64_t hash, std::span<const int32_t> tokens) {
  auto* stored = events_->empty() ? nullptr : std::get_if<KvBlockStored>(&events_->back());
  if (stored == nullptr || !parent_hash || stored->block_hashes.back() != *parent_hash) {
    KvBlockStored chain;
    chain.parent_block_hash = parent_hash;
    chain.block_size = config_.block_size;
    stored = &std::get<KvBlockStored>(events_->emplace_back(std::move(chain)));
  }
  stored->block_hashes.push_back(hash);
  stored->token_ids.insert(stored->token_ids.end(), tokens.begin(), tokens.end());
}

}  // namespace sluice::engine
