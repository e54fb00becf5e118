#include "engine/scheduling/scheduler.h"

#include <algorithm>
#include <utility>

#include "backends/check.h"
#include "engine/scheduling/fair_order.h"

namespace sluice::engine {
namespace {

// Service order: lower priority value first, then first come, then first added.
bool goes_before(const SequencePtr& a, const SequencePtr& b) {
  if (a->priority() != b->priority()) return a->priority() < b->priority();
  if (a->arrival_time() != b->arrival_time()) return a->arrival_time() < b->arrival_time();
  return a->seq_id() < b->seq_id();
}

}  // namespace

Scheduler::Scheduler(SchedulerConfig config, BlockHashFn hash)
    : config_(config), pool_(config.kv, hash) {
  SLUICE_CHECK(config_.max_num_batched_tokens > 0 && config_.max_num_seqs > 0 && config_.max_model_len > 0,
               "scheduler limits must be positive");
}

AddResult Scheduler::validate(const Sequence& seq) const {
  const int64_t num_prompt = seq.num_prompt_tokens();
  const int64_t max_len = config_.max_model_len;
  const auto& max_tokens = seq.params().max_tokens;
  auto rejected = [](std::string message) { return AddResult{AddStatus::rejected, std::move(message)}; };
  if (num_prompt == 0) return rejected("the prompt is empty");
  if (seq.is_embedding()) {  // prefill only: the prompt may fill the context
    if (num_prompt > max_len) {
      return rejected("This model's maximum context length is " + std::to_string(max_len) +
                      " tokens. However, your input has " + std::to_string(num_prompt) + " tokens.");
    }
    if (pool_.num_blocks_for(num_prompt) > pool_.num_blocks()) {
      return rejected("the input needs " + std::to_string(pool_.num_blocks_for(num_prompt)) +
                      " KV cache blocks but the cache holds only " + std::to_string(pool_.num_blocks()));
    }
    return {};
  }
  if (max_tokens && *max_tokens < 1) return rejected("max_tokens must be at least 1");
  if (max_tokens && num_prompt + *max_tokens > max_len) {
    return rejected("This model's maximum context length is " + std::to_string(max_len) +
                    " tokens. However, you requested " + std::to_string(num_prompt + *max_tokens) +
                    " tokens (" + std::to_string(num_prompt) + " in the prompt, " +
                    std::to_string(*max_tokens) + " in the completion).");
  }
  if (num_prompt >= max_len) {
    return rejected("This model's maximum context length is " + std::to_string(max_len) +
                    " tokens. However, your prompt has " + std::to_string(num_prompt) +
                    " tokens, which leaves no room for the completion.");
  }
  // The last sampled token never enters the KV cache.
  const int64_t num_kv_tokens = num_prompt + seq.max_output_tokens(max_len) - 1;
  const int64_t num_blocks = pool_.num_blocks_for(num_kv_tokens);
  if (num_blocks > pool_.num_blocks()) {
    return rejected("the request needs " + std::to_string(num_blocks) + " KV cache blocks (" +
                    std::to_string(num_kv_tokens) + " tokens) but the cache holds only " +
                    std::to_string(pool_.num_blocks()) + "; lower max_tokens");
  }
  return {};
}

AddResult Scheduler::add(SequencePtr seq) { return add(std::span<const SequencePtr>(&seq, 1)); }

AddResult Scheduler::add(std::span<const SequencePtr> choices) {
  SLUICE_CHECK(!choices.empty(), "add needs a sequence");
  for (const SequencePtr& seq : choices) {
    SLUICE_CHECK(seq->status() == SequenceStatus::waiting && seq->block_table().empty(),
                 "add takes a new sequence");
    AddResult result = validate(*seq);
    if (!result.ok()) {
      ++stats_.num_rejected;
      return result;
    }
  }
  if (waiting_.size() + choices.size() > static_cast<size_t>(config_.max_waiting)) {
    ++stats_.num_queue_full;
    return {AddStatus::queue_full, "the request queue is full (" + std::to_string(waiting_.size()) +
                                       " waiting); retry later"};
  }
  for (const SequencePtr& seq : choices) {
    seq->set_seq_id(next_seq_id_++);
    enqueue(seq);
    ++stats_.num_added;
  }
  return {};
}

void Scheduler::enqueue(SequencePtr seq) {
  seq->set_status(seq->num_output_tokens() > 0 || seq->num_preemptions() > 0 ? SequenceStatus::preempted
                                                                              : SequenceStatus::waiting);
  const auto at = std::upper_bound(waiting_.begin(), waiting_.end(), seq, goes_before);
  waiting_.insert(at, std::move(seq));
}

void Scheduler::preempt(const SequencePtr& seq) {
  pool_.free(*seq);  // num_computed_tokens -> 0: everything is recomputed
  seq->clear_draft_tokens();
  seq->count_preemption();
  ++stats_.num_preemptions;
  enqueue(seq);
}

void Scheduler::mark_finished(Sequence& seq, FinishReason reason) {
  seq.set_finished(reason);
  ++stats_.num_finished[static_cast<size_t>(reason)];
}

void Scheduler::expire(Clock::time_point now) {
  auto check = [&](const SequencePtr& seq) {
    if (seq->is_finished()) return;
    const bool never_ran = !seq->first_scheduled_time();
    if (seq->deadline() && now >= *seq->deadline()) {
      mark_finished(*seq, FinishReason::timeout);
    } else if (never_ran && seq->queue_deadline() && now >= *seq->queue_deadline()) {
      seq->set_timed_out_in_queue();
      mark_finished(*seq, FinishReason::timeout);
    }
  };
  for (const SequencePtr& seq : running_) check(seq);
  for (const SequencePtr& seq : waiting_) check(seq);
}

void Scheduler::reap(ScheduledStep& step) {
  auto drop = [&](const SequencePtr& seq) {
    if (!seq->is_finished()) return false;
    pool_.free(*seq);
    step.finished.push_back(seq);
    return true;
  };
  std::erase_if(running_, drop);
  std::erase_if(waiting_, drop);
}

int64_t Scheduler::chunk(const Sequence& seq, int64_t num_computed, int64_t budget) const {
  int64_t n = seq.num_tokens() - num_computed;
  // Drafts ride behind a decode token only; cut short by the budget they still verify.
  if (seq.is_decoding()) n += static_cast<int64_t>(seq.draft_tokens().size());
  if (config_.long_prefill_token_threshold > 0) n = std::min(n, config_.long_prefill_token_threshold);
  if (seq.wants_prompt_logits() && num_computed < seq.num_prompt_tokens()) n = std::min(n, kMaxPromptScoringTokens);
  return std::min(n, budget);
}

void Scheduler::emit(ScheduledStep& step, const SequencePtr& seq, int64_t num_new_tokens) const {
  ScheduledSequence scheduled;
  scheduled.seq = seq;
  scheduled.start_position = seq->num_computed_tokens();
  scheduled.num_new_tokens = num_new_tokens;
  scheduled.query_start = step.num_batched_tokens;
  const int64_t end = scheduled.start_position + num_new_tokens;
  scheduled.samples = end >= seq->num_tokens() && !seq->is_embedding();
  scheduled.decodes = seq->is_decoding();
  if (end > seq->num_tokens()) {
    const auto drafts = seq->draft_tokens().first(static_cast<size_t>(end - seq->num_tokens()));
    scheduled.draft_tokens.assign(drafts.begin(), drafts.end());
  }
  scheduled.block_table = seq->block_table();
  const auto tokens = seq->tokens();
  for (int64_t pos = scheduled.start_position; pos < end; ++pos)
    step.token_ids.push_back(pos < seq->num_tokens() ? tokens[pos] : scheduled.draft_tokens[pos - seq->num_tokens()]);
  step.num_batched_tokens += num_new_tokens;
  step.num_sampling += scheduled.samples;
  step.seqs.push_back(std::move(scheduled));
}

ScheduledStep Scheduler::schedule(Clock::time_point now) {
  ScheduledStep step;
  expire(now);
  reap(step);
  int64_t budget = config_.max_num_batched_tokens;

  // Running sequences first. Victims come off the back, so a sequence already given
  // its tokens this step is never preempted after the fact.
  fair_sort(running_, {}, &history_);
  // While anyone decodes, prompt chunks share a smaller budget of their own.
  const bool has_decoding = std::ranges::any_of(running_, [](const SequencePtr& seq) { return seq->is_decoding(); });
  const bool capped = has_decoding && config_.max_prefill_tokens_while_decoding > 0;
  int64_t prefill_budget = capped ? config_.max_prefill_tokens_while_decoding : config_.max_num_batched_tokens;
  // Under that cap, half of it stays for prompts not yet admitted: otherwise a long
  // prompt's chunks would take it all, step after step, and a short request arriving
  // behind it would wait until the whole long prompt was computed.
  const int64_t newcomer_reserve = capped && !waiting_.empty() ? prefill_budget / 2 : 0;
  std::vector<std::pair<SequencePtr, int64_t>> planned;
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    const SequencePtr seq = running_[i];
    const bool is_prefill = !seq->is_decoding();
    if (is_prefill && prefill_budget - newcomer_reserve <= 0) {
      ++i;  // keeps its blocks; goes on next step
      continue;
    }
    int64_t n = chunk(*seq, seq->num_computed_tokens(),
                      is_prefill ? std::min(budget, prefill_budget - newcomer_reserve) : budget);
    SLUICE_CHECK(n > 0, "a running sequence with nothing to compute");
    bool still_running = true;
    while (!pool_.allocate_slots(*seq, n)) {
      if (!seq->draft_tokens().empty() && n > 1) {  // drafts are the first thing to give up
        seq->clear_draft_tokens();
        n = chunk(*seq, seq->num_computed_tokens(), budget);
        continue;
      }
      const SequencePtr victim = running_.back();
      running_.pop_back();
      preempt(victim);
      step.preempted.push_back(victim);
      if (victim == seq) {
        still_running = false;
        break;
      }
    }
    if (!still_running) break;
    planned.emplace_back(seq, n);
    budget -= n;
    if (is_prefill) prefill_budget -= n;
    ++i;
  }

  // Then waiting ones, unless this step had to preempt: blocks are short right now.
  // They take turns by client and request (fair_order.h). The order is strict: the
  // first one that does not fit stops admission, so a long prompt is not starved by
  // short ones behind it.
  const auto has_room = [&] {
    return budget > 0 && prefill_budget > 0 && running_.size() < static_cast<size_t>(config_.max_num_seqs);
  };
  if (step.preempted.empty() && !waiting_.empty() && has_room()) {
    std::vector<SequencePtr> order(waiting_.begin(), waiting_.end());
    fair_sort(order, running_, &history_);
    bool admitted = false;
    for (const SequencePtr& seq : order) {
      if (!has_room()) break;
      if (config_.kv.enable_prefix_caching && !seq->can_share_leader_prompt()) {
        continue;  // n > 1: let the leader fill the cache first, then share its blocks.
      }
      // Cached prompt positions would have no logits to score the prompt with.
      // An embedding's pooled rows must be computed too.
      const CachedPrefix prefix = seq->wants_prompt_logits() || seq->is_embedding()
                                      ? CachedPrefix{}
                                      : pool_.find_cached_prefix(seq->tokens());
      const int64_t n = chunk(*seq, prefix.num_cached_tokens, std::min(budget, prefill_budget));
      if (!pool_.allocate_slots(*seq, n, &prefix)) break;
      if (!seq->first_scheduled_time()) {
        seq->set_first_scheduled_time(now);
        seq->set_num_cached_tokens(prefix.num_cached_tokens);
      }
      seq->set_status(SequenceStatus::running);
      running_.push_back(seq);
      planned.emplace_back(seq, n);
      budget -= n;
      prefill_budget -= n;
      history_.record_admission(*seq);
      admitted = true;
    }
    if (admitted) {
      std::erase_if(waiting_, [](const SequencePtr& seq) { return seq->status() == SequenceStatus::running; });
      history_.prune(running_, waiting_);
    }
  }

  for (const auto& [seq, n] : planned) emit(step, seq, n);
  if (!step.empty()) {
    ++stats_.num_steps;
    stats_.num_iteration_tokens += static_cast<uint64_t>(step.num_batched_tokens);
    stats_.last_iteration_tokens = step.num_batched_tokens;
  }
  return step;
}

std::vector<SequencePtr> Scheduler::update(const ScheduledStep& step, std::span<const int32_t> sampled) {
  SLUICE_CHECK(sampled.size() == static_cast<size_t>(step.num_sampling), "one sampled token per sampling sequence");
  std::vector<SequencePtr> finished;
  size_t next_sample = 0;
  for (const ScheduledSequence& scheduled : step.seqs) {
    Sequence& seq = *scheduled.seq;
    const int32_t token = scheduled.samples ? sampled[next_sample++] : -1;
    if (seq.is_finished()) continue;  // aborted or finished by the caller meanwhile
    SLUICE_CHECK(seq.num_computed_tokens() == scheduled.start_position, "update does not match schedule");
    // Drafts' KV counts once accepted (commit_draft).
    seq.set_num_computed_tokens(scheduled.start_position + scheduled.num_new_tokens -
                                static_cast<int64_t>(scheduled.draft_tokens.size()));
    if (seq.is_embedding()) {
      // Prefill only: done with its prompt, its blocks go back at once, uncached.
      if (!seq.is_prefill_done()) continue;
      stats_.num_prompt_tokens += static_cast<uint64_t>(seq.num_prompt_tokens());
      mark_finished(seq, FinishReason::stop);
      pool_.free(seq);
      finished.push_back(scheduled.seq);
      continue;
    }
    pool_.cache_full_blocks(seq);
    if (!scheduled.samples) continue;
    if (seq.num_output_tokens() == 0) stats_.num_prompt_tokens += static_cast<uint64_t>(seq.num_prompt_tokens());
    seq.append_token(token);
    ++stats_.num_generation_tokens;
    finish_on_length(scheduled.seq, &finished);
  }
  if (!finished.empty()) {
    std::erase_if(running_, [&](const SequencePtr& seq) { return std::ranges::find(finished, seq) != finished.end(); });
  }
  return finished;
}

void Scheduler::finish_on_length(const SequencePtr& seq, std::vector<SequencePtr>* finished) {
  if (seq->num_output_tokens() < seq->max_output_tokens(config_.max_model_len) &&
      seq->num_tokens() < config_.max_model_len)
    return;
  mark_finished(*seq, FinishReason::length);
  pool_.free(*seq);
  finished->push_back(seq);
}

bool Scheduler::commit_draft(const SequencePtr& seq, int32_t next) {
  SLUICE_CHECK(!seq->is_finished() && seq->is_decoding(), "commit_draft on a sequence that does not decode");
  const int64_t num_computed = seq->num_computed_tokens() + 1;
  SLUICE_CHECK(pool_.num_blocks_for(num_computed) <= static_cast<int64_t>(seq->block_table().size()),
               "commit_draft past the slots the step computed");
  seq->set_num_computed_tokens(num_computed);
  pool_.cache_full_blocks(*seq);
  seq->append_token(next);
  ++stats_.num_generation_tokens;
  std::vector<SequencePtr> finished;
  finish_on_length(seq, &finished);
  if (finished.empty()) return false;
  std::erase(running_, seq);
  return true;
}

void Scheduler::release_rejected_drafts(Sequence& seq) {
  if (seq.is_finished()) return;  // its blocks are back already
  pool_.free_tail(seq, seq.num_computed_tokens());
}

void Scheduler::finish(const SequencePtr& seq, FinishReason reason) {
  if (seq->is_finished()) {
    // Reached max_tokens on the very token that stops it: report the stop.
    if (seq->finish_reason() == FinishReason::length && reason == FinishReason::stop) {
      --stats_.num_finished[static_cast<size_t>(FinishReason::length)];
      mark_finished(*seq, reason);
    }
    return;
  }
  mark_finished(*seq, reason);
  pool_.free(*seq);
  std::erase(running_, seq);
  std::erase(waiting_, seq);
}

bool Scheduler::abort(std::string_view request_id, FinishReason reason) {
  bool found = false;
  auto check = [&](const SequencePtr& seq) {
    if (seq->request_id() != request_id || seq->is_finished()) return;
    mark_finished(*seq, reason);
    found = true;
  };
  for (const SequencePtr& seq : running_) check(seq);
  for (const SequencePtr& seq : waiting_) check(seq);
  return found;
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats stats = stats_;
  stats.num_running = num_running();
  stats.num_waiting = num_waiting();
  stats.kv_cache_usage = pool_.usage();
  stats.num_prefix_cache_queries = pool_.num_prefix_cache_queries();
  stats.num_prefix_cache_hits = pool_.num_prefix_cache_hits();
  return stats;
}

}  // namespace sluice::engine
