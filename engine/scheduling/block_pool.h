#pragma once
// The paged KV cache's bookkeeping, no tensors: a fixed pool of blocks of
// block_size token slots (one id addresses the same slots in every layer), their
// reference counts, a free queue in eviction order, and the prefix cache.
//
// Prefix cache. A FULL block whose KV is computed is keyed by a chained hash
// hash(parent's hash, its tokens) and stays findable after its last user frees it,
// until a fresh block is needed and it is evicted, least recently freed first. A hit
// needs the hash, the block's own tokens AND the exact parent entry (cache_id) to
// match, so a 64-bit collision at any depth can never hand out someone else's KV.
//
// Free-queue order: blocks that never held a full cached prefix are reused first;
// cached ones are queued at the back, a sequence's tail blocks ahead of its head
// blocks (prefix heads are the most shareable), so eviction is LRU.
//
// n > 1: the choices of one request share the leader's full prompt blocks through
// this cache (ref counts > 1, never written again, so no copy-on-write). The block
// holding the last prompt token is never shared: each choice recomputes the tokens
// after the shared full blocks (1 to block_size of them) into a block of its own,
// which also gives each choice its own logits for its first sample.
//
// KV-cache events (kv_events.h): with an event log attached, every new cache entry
// is recorded as BlockStored (its hash, its parent's, its tokens) and every evicted
// one as BlockRemoved. Without one (the default) recording is a null-pointer test.
//
// Called by the Scheduler on the engine thread only.
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/scheduling/kv_events.h"
#include "engine/scheduling/sequence.h"

namespace sluice::engine {

struct BlockPoolConfig {
  int32_t num_blocks = 0;
  int32_t block_size = 16;  // tokens per block
  bool enable_prefix_caching = true;
};

using BlockHashFn = uint64_t (*)(uint64_t parent_hash, std::span<const int32_t> tokens);

// The default chained hash: 64-bit mixing over every token id and the parent hash.
uint64_t hash_block_tokens(uint64_t parent_hash, std::span<const int32_t> tokens);
inline constexpr uint64_t kRootBlockHash = 0x736c756963650001ull;

// What find_cached_prefix found: blocks to share, and their keys for the sequence.
struct CachedPrefix {
  std::vector<int32_t> blocks;
  std::vector<BlockKey> keys;
  int64_t num_cached_tokens = 0;  // blocks.size() * block_size
};

class BlockPool {
 public:
  // `hash` is replaceable so tests can force collisions.
  explicit BlockPool(BlockPoolConfig config, BlockHashFn hash = hash_block_tokens);

  // The longest run of cached full blocks at the start of `tokens`, never covering
  // the last token: it must be computed so that its logits exist. Changes nothing.
  CachedPrefix find_cached_prefix(std::span<const int32_t> tokens) const;

  // Makes room for seq's KV up to num_computed + num_new_tokens. With `prefix`
  // (first admission, empty block table) the prefix blocks are taken first and the
  // sequence's num_computed_tokens becomes prefix->num_cached_tokens; the prefix
  // cache query/hit counters count this admission. False, with nothing changed, when
  // the pool cannot supply the blocks: the scheduler then preempts someone.
  bool allocate_slots(Sequence& seq, int64_t num_new_tokens, const CachedPrefix* prefix = nullptr);

  // Drops seq's references (tail block first), clears its block table and keys and
  // sets num_computed_tokens to 0. Cached blocks stay findable until evicted.
  void free(Sequence& seq);

  // Drops seq's blocks past the ones that hold its first num_tokens slots (the
  // slots of rejected speculative drafts). They must not be cached: only blocks
  // wholly inside num_computed_tokens ever are.
  void free_tail(Sequence& seq, int64_t num_tokens);

  // Enters seq's newly full, computed blocks into the prefix cache.
  void cache_full_blocks(Sequence& seq);

  // From now on, appends the prefix cache's changes to *log (null: stop recording),
  // starting with AllBlocksCleared so a subscriber forgets any earlier state of
  // this pool. The caller drains the log; it must outlive the recording.
  void record_events(std::vector<KvCacheEvent>* log);

  int32_t block_size() const { return config_.block_size; }
  int32_t num_blocks() const { return config_.num_blocks; }
  int64_t num_blocks_for(int64_t num_tokens) const;
  int32_t num_free_blocks() const { return num_free_; }  // includes evictable cached blocks
  int32_t num_cached_blocks() const { return static_cast<int32_t>(cached_.size()); }
  double usage() const;  // fraction of blocks referenced by a sequence, 0..1
  int32_t ref_count(int32_t block) const { return blocks_[block].ref_count; }
  bool is_cached(int32_t block) const { return blocks_[block].cache_id != 0; }
  std::vector<int32_t> free_queue() const;  // front = next to be reused

  // Prefix-cache counters in tokens, as vLLM reports them.
  uint64_t num_prefix_cache_queries() const { return num_queries_; }
  uint64_t num_prefix_cache_hits() const { return num_hits_; }

  // Drops every cached block no sequence references (POST /flush_cache): they stay
  // free, no longer findable, and are reused first. Blocks in use keep their entries.
  // Returns how many were dropped.
  int32_t flush_cached();

 private:
  struct Block {
    int32_t ref_count = 0;
    uint64_t hash = 0;
    uint64_t cache_id = 0;         // unique per cache entry, never reused; 0: not cached
    uint64_t parent_cache_id = 0;  // 0 for the first block of a prompt
    std::vector<int32_t> tokens;   // [block_size] while cached, for hit verification
    int32_t prev = -1, next = -1;  // free-queue links; both -1 when not queued
  };

  std::span<const int32_t> block_tokens(std::span<const int32_t> tokens, int64_t index) const;
  bool holds(const Block& block, uint64_t parent_cache_id, std::span<const int32_t> tokens) const;
  void push_front(int32_t id);
  void push_back(int32_t id);
  void unlink(int32_t id);
  void touch(int32_t id);   // take a reference, leaving the free queue if needed
  int32_t take_fresh();     // pop the front, evicting its cache entry
  void uncache(int32_t id);  // drops the block's cache entry (recorded as removed)
  void record_stored(std::optional<uint64_t> parent_hash, uint64_t hash, std::span<const int32_t> tokens);

  BlockPoolConfig config_;
  BlockHashFn hash_;
  std::vector<Block> blocks_;  // [num_blocks + 1]: the last is the free-queue sentinel
  int32_t num_free_ = 0;
  std::unordered_map<uint64_t, int32_t> cached_;  // hash -> block id
  uint64_t next_cache_id_ = 1;
  uint64_t num_queries_ = 0;
  uint64_t num_hits_ = 0;
  std::vector<KvCacheEvent>* events_ = nullptr;  // null: KV-cache events off
};

}  // namespace sluice::engine
