#pragma once
// One choice of one request as the scheduler sees it: its tokens, how many of them
// have KV in the cache (num_computed_tokens, catching up with num_tokens: prefill
// chunks and decode are the same mechanism), its block table, status and the
// request-level knobs the scheduler reads (priority, arrival, deadlines).
//
// Owned through SequencePtr by the engine and the Scheduler; only the engine
// thread touches it. The Scheduler and BlockPool are the only writers of the
// scheduling fields; the engine appends nothing itself (Scheduler::update does).
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/pooling.h"
#include "engine/sampler.h"

namespace sluice::engine {

using Clock = std::chrono::steady_clock;
class ChoiceState;  // engine/choice_state.h

enum class SequenceStatus { waiting, running, preempted, finished };

// Spelled as on the wire (OpenAI finish_reason) where one exists.
enum class FinishReason { none, stop, length, abort, timeout, error };

std::string_view to_string(SequenceStatus status);
std::string_view to_string(FinishReason reason);

// Identity of one full block of this sequence in the prefix cache: the chained
// hash of its tokens, and the cache entry that holds exactly this prefix (0: none,
// so the blocks after it are not cached either). Written by BlockPool only.
struct BlockKey {
  uint64_t hash = 0;
  uint64_t cache_id = 0;
};

class Sequence {
 public:
  Sequence(std::string request_id, std::vector<int32_t> prompt_tokens,
           std::shared_ptr<const SamplingParams> params, Clock::time_point arrival_time = Clock::now(),
           int32_t choice_index = 0);

  // --- identity ---
  const std::string& request_id() const { return request_id_; }
  int32_t choice_index() const { return choice_index_; }
  uint64_t seq_id() const { return seq_id_; }  // assigned by Scheduler::add, FCFS tie-break
  void set_seq_id(uint64_t id) { seq_id_ = id; }

  // --- tokens: prompt then output, one vector ---
  std::span<const int32_t> tokens() const { return tokens_; }
  std::span<const int32_t> prompt_tokens() const { return {tokens_.data(), static_cast<size_t>(num_prompt_tokens_)}; }
  std::span<const int32_t> output_tokens() const { return std::span<const int32_t>(tokens_).subspan(num_prompt_tokens_); }
  int64_t num_tokens() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t num_prompt_tokens() const { return num_prompt_tokens_; }
  int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens_; }
  int32_t last_token() const { return tokens_.back(); }
  void append_token(int32_t token) { tokens_.push_back(token); }

  // Tokens whose KV is in the cache. Equal to num_tokens() - 1 while decoding: the
  // newest sampled token is computed in the next step.
  int64_t num_computed_tokens() const { return num_computed_tokens_; }
  void set_num_computed_tokens(int64_t n) { num_computed_tokens_ = n; }
  bool is_prefill_done() const { return num_computed_tokens_ >= num_prompt_tokens_; }
  // Only the newest sampled token lacks KV: the next step is a decode step.
  bool is_decoding() const { return num_computed_tokens_ + 1 == num_tokens() && is_prefill_done(); }

  // --- speculative decoding ---
  // Tokens a drafter proposes to follow tokens(), for the next step to verify. Never
  // part of tokens(): only what the target model accepts is appended. The engine sets
  // them before each schedule(); the scheduler computes them only while decoding.
  std::span<const int32_t> draft_tokens() const { return draft_tokens_; }
  std::vector<int32_t>& mutable_draft_tokens() { return draft_tokens_; }
  void clear_draft_tokens() { draft_tokens_.clear(); }

  // --- KV blocks (BlockPool writes these) ---
  const std::vector<int32_t>& block_table() const { return block_table_; }
  std::vector<int32_t>& mutable_block_table() { return block_table_; }
  const std::vector<BlockKey>& block_keys() const { return block_keys_; }
  std::vector<BlockKey>& mutable_block_keys() { return block_keys_; }

  // --- state ---
  SequenceStatus status() const { return status_; }
  void set_status(SequenceStatus status) { status_ = status; }
  bool is_finished() const { return status_ == SequenceStatus::finished; }
  FinishReason finish_reason() const { return finish_reason_; }
  void set_finished(FinishReason reason);

  // --- scheduling knobs (vLLM: a lower priority value is served first) ---
  int32_t priority() const { return priority_; }
  void set_priority(int32_t priority) { priority_ = priority; }
  Clock::time_point arrival_time() const { return arrival_time_; }
  // Latest time to be admitted for the first time, and latest time to finish.
  std::optional<Clock::time_point> queue_deadline() const { return queue_deadline_; }
  void set_queue_deadline(std::optional<Clock::time_point> t) { queue_deadline_ = t; }
  std::optional<Clock::time_point> deadline() const { return deadline_; }
  void set_deadline(std::optional<Clock::time_point> t) { deadline_ = t; }

  std::optional<Clock::time_point> first_scheduled_time() const { return first_scheduled_time_; }
  void set_first_scheduled_time(Clock::time_point t) { first_scheduled_time_ = t; }
  // The deadline that ended it (FinishReason::timeout) was the queue deadline: it
  // was never admitted because others held the queue, not because it ran too long.
  bool timed_out_in_queue() const { return timed_out_in_queue_; }
  void set_timed_out_in_queue() { timed_out_in_queue_ = true; }
  int32_t num_preemptions() const { return num_preemptions_; }
  void count_preemption() { ++num_preemptions_; }
  // Prompt tokens served from the prefix cache at the first admission.
  int64_t num_cached_tokens() const { return num_cached_tokens_; }
  void set_num_cached_tokens(int64_t n) { num_cached_tokens_ = n; }
  // Only blocks within the first this-many tokens may enter the prefix cache: for a
  // speech sequence, whose later "tokens" are codebook-0 ids standing for whole
  // frames (two frames can share one and differ in the rest), its prompt rows.
  int64_t cacheable_tokens() const { return cacheable_tokens_; }
  void set_cacheable_tokens(int64_t n) { cacheable_tokens_ = n; }

  // --- fair sharing (fair_order.h) ---
  // The API request this choice is a part of (its prompts and choices share one
  // turn; default: the hash of request_id) and the client that sent it (an API key's
  // hash; 0: unknown, so the request stands for itself).
  uint64_t fair_group() const { return fair_group_; }
  void set_fair_group(uint64_t group) { fair_group_ = group; }
  uint64_t fair_client() const { return fair_client_; }
  void set_fair_client(uint64_t client) { fair_client_ = client; }

  // --- n > 1: choices after the first wait for the first one's prompt blocks ---
  const std::shared_ptr<const Sequence>& leader() const { return leader_; }
  void set_leader(std::shared_ptr<const Sequence> leader) { leader_ = std::move(leader); }
  // False while the leader still computes the prompt that this choice will share.
  bool can_share_leader_prompt() const;

  // --- sampling ---
  const SamplingParams& params() const { return *params_; }
  const std::shared_ptr<const SamplingParams>& params_ptr() const { return params_; }
  Rng& rng() { return rng_; }
  // Choice 0 of a request that asked for prompt log-probabilities: its prefill
  // computes logits for every prompt position, so it never takes a cached prefix.
  bool wants_prompt_logits() const { return choice_index_ == 0 && params_->prompt_logprobs.has_value(); }
  // An embedding request: prefill only, no sampling; it finishes when its prompt is
  // computed, and its blocks never enter the prefix cache (nor take a cached prefix:
  // the rows its pooling needs must be computed).
  const std::optional<Pooling>& embedding() const { return embedding_; }
  void set_embedding(std::optional<Pooling> pooling) { embedding_ = pooling; }
  bool is_embedding() const { return embedding_.has_value(); }
  // Output tokens allowed: max_tokens, or up to max_model_len.
  int64_t max_output_tokens(int64_t max_model_len) const;

  // --- the engine's output state of this choice (choice_state.h), or null: none
  // (speech sequences, tests) or its request ended. Set and cleared by ChoiceState.
  ChoiceState* choice_state() const { return choice_state_; }
  void set_choice_state(ChoiceState* state) { choice_state_ = state; }

 private:
  std::string request_id_;
  int32_t choice_index_ = 0;
  uint64_t seq_id_ = 0;
  std::vector<int32_t> tokens_;
  std::vector<int32_t> draft_tokens_;
  int64_t num_prompt_tokens_ = 0;
  int64_t num_computed_tokens_ = 0;
  std::vector<int32_t> block_table_;
  std::vector<BlockKey> block_keys_;
  SequenceStatus status_ = SequenceStatus::waiting;
  FinishReason finish_reason_ = FinishReason::none;
  int32_t priority_ = 0;
  Clock::time_point arrival_time_;
  std::optional<Clock::time_point> queue_deadline_;
  std::optional<Clock::time_point> deadline_;
  std::optional<Clock::time_point> first_scheduled_time_;
  int32_t num_preemptions_ = 0;
  bool timed_out_in_queue_ = false;
  uint64_t fair_group_ = 0;
  uint64_t fair_client_ = 0;
  int64_t num_cached_tokens_ = 0;
  int64_t cacheable_tokens_ = std::numeric_limits<int64_t>::max();
  std::shared_ptr<const Sequence> leader_;
  std::optional<Pooling> embedding_;
  std::shared_ptr<const SamplingParams> params_;
  Rng rng_;
  ChoiceState* choice_state_ = nullptr;
};

using SequencePtr = std::shared_ptr<Sequence>;

// The params.n choices of one request. Choice i draws from Rng(seed, i) when a seed
// is given, so choice 0 matches an n = 1 request with the same seed. Choices 1..n-1
// name choice 0 as leader, so they share its full prompt blocks (see BlockPool).
std::vector<SequencePtr> make_choices(const std::string& request_id, std::vector<int32_t> prompt_tokens,
                                      std::shared_ptr<const SamplingParams> params,
                                      Clock::time_point arrival_time = Clock::now(), int32_t priority = 0);

}  // namespace sluice::engine
