#pragma once
// Decides, once per engine step, which sequences run and how many tokens each
// computes, in the vLLM v1 style: one token budget, no prefill or decode phase.
// Every sequence has num_computed_tokens catching up with num_tokens; a step gives
// it a chunk of that gap (a prompt chunk, a recompute after preemption, or the one
// newest token while decoding), and it samples when the chunk reaches the end.
//
// Order within a step: running sequences first so decode never waits behind a long
// prompt; then waiting ones with the budget left over (prefix-cache lookup, block
// allocation, chunked prefill). Both in fair order (fair_order.h): priority, then
// round robin across clients and requests, then arrival, so one request of many
// prompts cannot hold the queue ahead of everyone else.
// When the pool runs dry, the last running sequence in that order (lowest priority,
// then the client holding the most, latest arrival) is preempted: its blocks are
// freed and it rejoins the waiting queue, to be recomputed. A step that preempts
// admits no one.
// Choices 1..n-1 of a request wait (without blocking the queue) until choice 0 has
// computed its prompt, then share its full prompt blocks through the prefix cache.
//
// Owns the BlockPool and every queue. Engine thread only; no locks.
#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/scheduling/block_pool.h"
#include "engine/scheduling/fair_order.h"
#include "engine/scheduling/sequence.h"

namespace sluice::engine {

struct SchedulerConfig {
  int64_t max_num_batched_tokens = 2048;       // token budget of one step
  int32_t max_num_seqs = 256;                  // running sequences at most
  int32_t max_waiting = 1024;                  // queued sequences at most; beyond: queue_full (429)
  int64_t long_prefill_token_threshold = 0;    // > 0: largest chunk one sequence gets per step
  // > 0: prompt tokens (prefill chunks, recomputes) a step takes at most while some
  // sequence decodes in it, so a long prompt arriving stalls no stream for longer
  // than this many tokens take (vLLM's chunked-prefill budget, inter-token latency).
  int64_t max_prefill_tokens_while_decoding = 0;
  int64_t max_model_len = 4096;                // prompt + output tokens
  BlockPoolConfig kv;
};

enum class AddStatus { accepted, queue_full, rejected };

// rejected: the request can never run (400); queue_full: try later (429).
struct AddResult {
  AddStatus status = AddStatus::accepted;
  std::string message;
  bool ok() const { return status == AddStatus::accepted; }
};

struct ScheduledSequence {
  SequencePtr seq;
  int64_t start_position = 0;        // seq's num_computed_tokens when scheduled
  int64_t num_new_tokens = 0;        // tokens computed this step
  int64_t query_start = 0;           // offset of its tokens in the step's flat arrays
  bool samples = false;              // the chunk reaches the last token: sample one (never an embedding)
  bool decodes = false;              // its newest token (and drafts), not a prompt chunk or a recompute
  std::vector<int32_t> block_table;  // snapshot, covers start_position + num_new_tokens
  // Speculative decoding: the drafted tokens this step computes after the sequence's
  // last token (the chunk's tail). Each of the chunk's last 1 + draft_tokens.size()
  // rows gets logits; the KV of a draft counts only once it is accepted.
  std::vector<int32_t> draft_tokens;
};

// One step for the model runner: its sequences (running ones first) and every
// scheduled token flattened, [num_batched_tokens]; the runner lays out positions
// and KV slots from each sequence's start and block table.
struct ScheduledStep {
  std::vector<ScheduledSequence> seqs;
  std::vector<int32_t> token_ids;
  int64_t num_batched_tokens = 0;
  int32_t num_sampling = 0;           // seqs with samples == true; update() wants that many tokens
  std::vector<SequencePtr> finished;  // finished by the scheduler since the last step: abort, timeout
  std::vector<SequencePtr> preempted; // preempted in this step
  bool empty() const { return seqs.empty(); }
};

// Cumulative counters and current gauges, for /metrics.
struct SchedulerStats {
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  double kv_cache_usage = 0.0;
  uint64_t num_added = 0;
  uint64_t num_rejected = 0;
  uint64_t num_queue_full = 0;
  uint64_t num_preemptions = 0;
  uint64_t num_prompt_tokens = 0;      // counted when a sequence samples its first token
  uint64_t num_generation_tokens = 0;
  uint64_t num_prefix_cache_queries = 0;  // tokens looked up at admission
  uint64_t num_prefix_cache_hits = 0;     // of those, tokens found cached
  uint64_t num_steps = 0;
  uint64_t num_iteration_tokens = 0;   // sum over steps
  int64_t last_iteration_tokens = 0;
  std::array<uint64_t, 6> num_finished{};  // indexed by FinishReason
};

// Prefill tokens per step of a sequence that scores its prompt: each is a row of
// logits (vocab floats) to compute and keep, so a long prompt is scored in chunks.
inline constexpr int64_t kMaxPromptScoringTokens = 256;

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, BlockHashFn hash = hash_block_tokens);

  // Queues a new sequence, or all choices of one request (all or none).
  AddResult add(SequencePtr seq);
  AddResult add(std::span<const SequencePtr> choices);

  // The next step. Reaps aborted and expired sequences first (now: the clock the
  // deadlines are read against).
  ScheduledStep schedule(Clock::time_point now = Clock::now());

  // Applies a computed step: advances num_computed_tokens, caches newly full blocks,
  // appends `sampled` (one per sequence with samples, in step order), finishes an
  // embedding whose prompt is computed (`stop`, blocks freed, uncached) and finishes on
  // max_tokens / max_model_len (`length`). Returns the sequences finished here.
  std::vector<SequencePtr> update(const ScheduledStep& step, std::span<const int32_t> sampled);

  // Speculative decoding, after update() appended the first token sampled for a
  // sequence with drafts: the token just appended equals the step's draft at its
  // position, so the KV the step computed for it is valid. Commits that KV (newly full
  // blocks enter the prefix cache), appends `next` (sampled at the following draft
  // position) and finishes on length as update() does. True when that finished it.
  bool commit_draft(const SequencePtr& seq, int32_t next);
  // Gives back the blocks allocated for drafts that were not accepted: the block
  // table shrinks to the committed KV. Their slots never entered the prefix cache.
  void release_rejected_drafts(Sequence& seq);

  // The caller's verdict after update (EOS, stop string, error): finishes now and
  // frees the blocks. A `stop` on the token that also hit max_tokens wins over
  // `length`, as OpenAI reports it.
  void finish(const SequencePtr& seq, FinishReason reason);

  // Client gone or deadline passed: every choice of the request becomes finished
  // (`abort`) at once; its blocks are freed at the next schedule(), which lists it
  // in ScheduledStep::finished. False when no unfinished choice has that id.
  bool abort(std::string_view request_id, FinishReason reason = FinishReason::abort);

  bool has_unfinished() const { return !running_.empty() || !waiting_.empty(); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  const std::vector<SequencePtr>& running() const { return running_; }
  // In (priority, arrival, seq_id) order; admission takes them in fair order.
  const std::deque<SequencePtr>& waiting() const { return waiting_; }
  const BlockPool& block_pool() const { return pool_; }
  // Drops the prefix cache's unreferenced blocks (BlockPool::flush_cached).
  int32_t flush_prefix_cache() { return pool_.flush_cached(); }
  // KV-cache events of the pool into *log (BlockPool::record_events).
  void record_kv_events(std::vector<KvCacheEvent>* log) { pool_.record_events(log); }
  const SchedulerConfig& config() const { return config_; }
  // The engine's pacing (prefill_pacer.h) moves this cap between steps.
  void set_max_prefill_tokens_while_decoding(int64_t cap) { config_.max_prefill_tokens_while_decoding = cap; }
  SchedulerStats stats() const;

 private:
  AddResult validate(const Sequence& seq) const;
  void enqueue(SequencePtr seq);     // into waiting_, keeping (priority, arrival, seq_id) order
  void preempt(const SequencePtr& seq);
  void mark_finished(Sequence& seq, FinishReason reason);
  void expire(Clock::time_point now);
  void reap(ScheduledStep& step);    // frees and drops finished sequences still queued
  int64_t chunk(const Sequence& seq, int64_t num_computed, int64_t budget) const;
  void finish_on_length(const SequencePtr& seq, std::vector<SequencePtr>* finished);
  void emit(ScheduledStep& step, const SequencePtr& seq, int64_t num_new_tokens) const;

  SchedulerConfig config_;
  BlockPool pool_;
  std::vector<SequencePtr> running_;
  std::deque<SequencePtr> waiting_;
  FairHistory history_;  // who was admitted last, for round robin
  uint64_t next_seq_id_ = 1;
  SchedulerStats stats_;
};

}  // namespace sluice::engine
