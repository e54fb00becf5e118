#pragma once
// A small model beside the target drafts its greedy continuation (vLLM's and
// llama-server's draft model). A greedy draft is a function of the sequence's
// tokens, so each drafted token is a point mass and the engine's verification
// (step_sampler.h) keeps the target's distribution: the output is the plain
// decoder's whatever the draft model says, only the speed depends on it.
//
// The draft model has a paged KV cache of its own. A sequence's state remembers the
// tokens whose K/V the cache holds; each proposal keeps their longest common prefix
// with the sequence's tokens now (what follows it: rejected drafts, or a preempted
// sequence recomputed, is overwritten), feeds the tokens the draft has not seen in
// chunks, then takes max_tokens greedy steps, all sequences of the call in one batch
// per step. Blocks come from a fixed pool; when it runs out, the states of the
// sequences that drafted least recently are dropped (a finished sequence's state
// leaves that way), and a sequence that still finds no room drafts nothing.
// Engine thread only, like the target.
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "engine/models/batch_builder.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model.h"
#include "engine/speculative/drafter.h"

namespace sluice::engine {

class ModelDrafter final : public Drafter {
 public:
  // `draft` (outlives the drafter) runs on the target's backend. Drafted ids stay
  // below setup.target_vocab_size. Allocates the cache and the draft's workspace:
  // throws backends::OutOfMemoryError when they do not fit.
  ModelDrafter(Model& draft, const DraftModelSetup& setup);

  void propose(std::span<const DraftRequest> requests) override;

  int64_t num_blocks() const { return cache_.num_blocks(); }
  int64_t num_free_blocks() const { return static_cast<int64_t>(free_blocks_.size()); }
  uint64_t cache_bytes() const { return cache_.bytes_per_block() * static_cast<uint64_t>(cache_.num_blocks()); }

 private:
  struct State {
    std::vector<int32_t> tokens;  // whose K/V the cache holds, positions 0, 1, ...
    std::vector<int32_t> blocks;  // the block table of those positions
    uint64_t last_used = 0;       // the proposal call that last drafted for it
  };
  // One sequence of the current call.
  struct Active {
    State* state = nullptr;
    const DraftRequest* request = nullptr;
    std::span<const int32_t> tokens;  // the sequence's tokens now
  };

  // Blocks for `positions` positions, taking them from states not drafting in this
  // call when the pool is short. False (and the state's blocks given back) when even
  // that is not enough.
  bool reserve(State& state, int64_t positions);
  void release(State& state);
  void feed_unseen(std::vector<Active>& active);
  void draft_next(std::vector<Active>& active);
  // Runs the builder's batch; returns its logit rows.
  std::span<const float> run();
  int32_t pick(size_t row) const;

  Model& draft_;
  int64_t target_vocab_size_;
  int64_t max_chunk_tokens_;
  int64_t max_rows_;
  KvCache cache_;
  BatchBuilder builder_;
  std::vector<int32_t> free_blocks_;
  std::unordered_map<uint64_t, State> states_;  // by Sequence::seq_id()
  uint64_t calls_ = 0;
  std::vector<Active> active_;
  std::vector<size_t> row_owner_;  // per logit row: its index in active_
  std::vector<float> logits_;
};

}  // namespace sluice::engine
