#pragma once
// KV-cache events: what the block pool's prefix cache gained and lost, so that a
// router can send a request where its prefix is already cached (vLLM's KV events).
// The BlockPool records them on the engine thread, the Engine hands each step's
// batch to a KvEventSink, and the sink (server/kv_events/) puts them on the wire.
// The engine knows no sockets and no wire format.
//
// Block hashes are the pool's chained 64-bit hash (hash_block_tokens in
// block_pool.h): a pure function of the tokens of the block and of every block
// before it, so the same prompt prefix has the same hashes on every replica and
// across restarts.
#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

namespace sluice::engine {

// Full blocks that entered the prefix cache, as one chain: block_hashes[i]'s parent
// is block_hashes[i - 1], and the first one's is parent_block_hash (none: the first
// block of a prompt). token_ids holds every block's tokens, block after block.
struct KvBlockStored {
  std::vector<uint64_t> block_hashes;
  std::optional<uint64_t> parent_block_hash;
  std::vector<int32_t> token_ids;
  int32_t block_size = 0;
};

// Cached blocks evicted (reused for other tokens): no longer findable.
struct KvBlockRemoved {
  std::vector<uint64_t> block_hashes;
};

// Whatever a subscriber knew about this pool is gone (a new pool, or a flushed one).
struct KvAllBlocksCleared {};

using KvCacheEvent = std::variant<KvBlockStored, KvBlockRemoved, KvAllBlocksCleared>;

// The events of one engine step, in the order they happened.
struct KvEventBatch {
  double timestamp = 0;  // seconds since the Unix epoch
  std::vector<KvCacheEvent> events;
};

// Implemented outside the engine. publish() is called on the engine thread after
// every step that changed the prefix cache; it must return at once and never block
// (queue the batch, or drop it and count the drop).
class KvEventSink {
 public:
  virtual ~KvEventSink() = default;
  virtual void publish(KvEventBatch batch) = 0;
};

}  // namespace sluice::engine
