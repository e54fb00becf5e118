#include "engine/engine.h"

#include <spdlog/spdlog.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/output_processor.h"
#include "engine/request_validation.h"
#include "engine/speculative/speculation.h"
#include "engine/step_sampler.h"

namespace sluice::engine {

namespace {

constexpr const char* kDeathPrefix = "the engine thread stopped: ";

}  // namespace

Engine::~Engine() { stop(); }

void Engine::start() {
  shell_.start([this] { loop_steps(); shutdown(); }, kDeathPrefix,
               [this](const std::string& reason, std::vector<InboxItem> queued) { die(reason, std::move(queued)); });
}

void Engine::stop() {
  if (shell_.stop()) return;
  // Never started: whatever was submitted still gets its "abort", on this thread.
  drain_inbox();
  if (!output_->empty()) shutdown();
}

SubmitResult Engine::submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  std::vector<std::shared_ptr<RequestStream>> streams;
  SubmitResult result = submit_all(std::move(one), streams);
  if (result.ok()) result.stream = std::move(streams.front());
  return result;
}

SubmitResult Engine::submit_all(std::vector<GenerationRequest> requests,
                                std::vector<std::shared_ptr<RequestStream>>& streams) {
  streams.clear();
  int32_t num_choices = 0;
  const RequestLimits limits{.vocab_size = model_.hparams().vocab_size,
                             .max_model_len = max_model_len_,
                             .num_kv_blocks = num_blocks_,
                             .block_size = config_.block_size,
                             .max_n = config_.max_n,
                             .max_logprobs = config_.max_logprobs};
  for (const GenerationRequest& request : requests) {
    if (auto error = validate_request(request, limits)) {
      shell_.count_rejected();
      return *error;
    }
    num_choices += request.params.n;
  }
  if (config_.max_waiting_per_request > 0 && num_choices > config_.max_waiting_per_request) {
    shell_.count_rejected();
    const bool several = requests.size() > 1;
    return submit_rejected("This request would queue " + std::to_string(num_choices) + " sequences (" +
                        std::to_string(requests.size()) + " prompt(s) x " + std::to_string(requests.front().params.n) +
                        " choice(s)) but one request may queue at most " +
                        std::to_string(config_.max_waiting_per_request) +
                        " (max_waiting_per_request); send fewer prompts or a lower n.",
                    several ? requests.front().prompt_param : "n");
  }
  const Clock::time_point arrival = Clock::now();
  std::vector<std::string> ids;
  std::vector<InboxItem> items;
  for (GenerationRequest& request : requests) {
    const size_t capacity = request.stream_capacity > 0 ? request.stream_capacity : config_.stream_capacity;
    streams.push_back(std::make_shared<RequestStream>(request.request_id, request.params.n, capacity));
    ids.push_back(request.request_id);
    items.push_back(InboxItem{.request = std::move(request), .stream = streams.back(), .arrival = arrival});
  }
  SubmitResult result = shell_.push(std::move(items), ids, num_choices);
  if (!result.ok()) streams.clear();
  return result;
}

bool Engine::abort(std::string_view request_id) { return shell_.abort(request_id); }

EngineStats Engine::stats() const { return shell_.stats(); }

void Engine::publish_stats(const StepMetrics* step) {
  EngineStats stats =
      engine_stats(scheduler_->stats(), output_->num_active(), num_blocks_, config_.block_size, kv_bytes_);
  if (speculation_) stats.speculation = speculation_->stats();
  shell_.publish(std::move(stats));
  if (step != nullptr && observer_ != nullptr) observer_->on_step(*step);
}

void Engine::publish_kv_events() {
  if (kv_event_log_.empty()) return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  config_.kv_events->publish(
      KvEventBatch{.timestamp = std::chrono::duration<double>(now).count(), .events = std::move(kv_event_log_)});
  kv_event_log_.clear();  // moved-from: valid, emptied for the next step
}

void Engine::loop_steps() {
  while (drain_inbox()) {
    output_->check_cancellations();
    if (!scheduler_->has_unfinished()) {
      output_->reap_done();
      publish_stats(nullptr);
      publish_kv_events();
      shell_.wait_for_work();
      continue;
    }
    shell_.begin_step();
    if (speculation_) speculation_->propose(scheduler_->running());
    if (prefill_pacer_) scheduler_->set_max_prefill_tokens_while_decoding(prefill_pacer_->cap());
    ScheduledStep step = scheduler_->schedule(Clock::now());
    shell_.set_num_waiting(scheduler_->num_waiting());
    for (const SequencePtr& seq : step.finished) output_->finish_scheduled(*seq);  // aborted or timed out
    if (step.empty()) {
      shell_.end_step();
      // Nothing runnable (e.g. only finished sequences were reaped): wait briefly
      // for news instead of spinning.
      output_->flush_deltas();
      output_->reap_done();
      publish_stats(nullptr);
      publish_kv_events();
      if (scheduler_->has_unfinished()) shell_.wait_for_work(std::chrono::milliseconds(1));
      continue;
    }
    int32_t num_constrained = 0;
    try {
      std::optional<ComputeTurns::Turn> turn;
      if (config_.compute_turns != nullptr) turn.emplace(*config_.compute_turns);
      const Clock::time_point started = Clock::now();
      num_constrained = run_step(step);
      if (prefill_pacer_) {
        int64_t decode_rows = 0;
        int64_t prompt_tokens = 0;
        for (const ScheduledSequence& scheduled : step.seqs)
          (scheduled.decodes ? decode_rows : prompt_tokens) += scheduled.num_new_tokens;
        prefill_pacer_->observe(decode_rows, prompt_tokens,
                                std::chrono::duration<double>(Clock::now() - started).count());
      }
    } catch (const std::exception& e) {
      fail_step(step, e.what());
    } catch (...) {
      fail_step(step, "an exception of unknown type");
    }
    output_->flush_deltas();
    output_->reap_done();
    StepMetrics metrics{.num_batched_tokens = step.num_batched_tokens,
                        .num_running = scheduler_->num_running(),
                        .num_waiting = scheduler_->num_waiting(),
                        .kv_cache_usage = scheduler_->block_pool().usage(),
                        .num_preempted = static_cast<int32_t>(step.preempted.size()),
                        .num_constrained = num_constrained};
    publish_stats(&metrics);
    publish_kv_events();
    shell_.end_step();
  }
}

// A step: the model runs and samples, the scheduler appends each row's first token
// (and finishes on length), then the output side takes every row's tokens. Returns
// the rows sampled under a grammar mask.
int32_t Engine::run_step(ScheduledStep& step) {
  const StepSamples& samples = sampler_->run(step, *runner_);
  if (!runner_->prompt_rows().empty()) output_->score_prompts(step, *runner_, samples.logits, *sampler_);
  if (!runner_->hidden_rows().empty()) output_->pool_embeddings(step, *runner_, model_.hparams().embedding_length);
  // update() takes each row's first token; the accepted drafts' tokens follow in emit().
  std::vector<int32_t> sampled;
  sampled.reserve(samples.first.size());
  for (size_t first : samples.first) sampled.push_back(samples.results[first].token);
  const std::vector<SequencePtr> finished = scheduler_->update(step, sampled);  // appends; finishes on length
  for (const SequencePtr& seq : finished)
    if (seq->is_embedding()) output_->finish_embedding(*seq);
  const Clock::time_point now = Clock::now();
  size_t row = 0;
  for (const ScheduledSequence& scheduled : step.seqs) {
    if (!scheduled.samples) continue;
    const std::span<const SampleResult> tokens = samples.tokens(row);
    if (speculation_) speculation_->learn(*scheduled.seq, scheduled.draft_tokens.size(), tokens.size());
    output_->emit(*scheduled.seq, tokens, samples.error(row), now);
    if (!scheduled.draft_tokens.empty()) scheduler_->release_rejected_drafts(*scheduled.seq);
    ++row;
  }
  return samples.num_constrained;
}

// The step's sequences may have written part of their KV and the scheduler has not
// advanced them, so they cannot go on: their requests end with "error" (whole
// requests, as a response is all its choices) and their blocks go back at the next
// schedule(). Blocks enter the prefix cache only in update(), after a step
// succeeded, so nothing half-written is ever shared.
void Engine::fail_step(const ScheduledStep& step, const std::string& what) {
  spdlog::error("engine {}: a step of {} sequences ({} tokens) failed: {}; ending their requests with error",
                config_.model_name, step.seqs.size(), step.num_batched_tokens, what);
  output_->fail_step(step, what);
}

// Something outside a step threw: the scheduling state can no longer be trusted, so
// the engine takes no more work (the shell is marked dead by now) and ends
// everything it holds with "error".
void Engine::die(const std::string& reason, std::vector<InboxItem> queued) {
  spdlog::critical("engine {}: {}", config_.model_name, reason);
  const std::string error = "the engine stopped: " + reason.substr(std::string_view(kDeathPrefix).size());
  output_->fail_all(error);
  for (InboxItem& item : queued) {
    for (int32_t i = 0; i < item.stream->num_choices(); ++i) {
      ChoiceFinish finish;
      finish.index = i;
      finish.reason = FinishReason::error;
      finish.error = error;
      item.stream->push_finish(std::move(finish));
    }
    shell_.release(item.request.request_id);
  }
}

EngineHealth Engine::health(std::chrono::nanoseconds step_timeout) const { return shell_.health(step_timeout); }

std::future<int32_t> Engine::flush_prefix_cache() {
  // Shared: the shell destroys an unrun task, and with it the promise (broken_promise).
  auto promise = std::make_shared<std::promise<int32_t>>();
  std::future<int32_t> flushed = promise->get_future();
  shell_.post([this, promise] { promise->set_value(scheduler_->flush_prefix_cache()); });
  return flushed;  // refused (stopping): the promise is gone already, broken
}

bool Engine::drain_inbox() {
  auto drained = shell_.drain();
  for (auto& task : drained.tasks) task();
  for (InboxItem& item : drained.items) admit(std::move(item));
  for (const std::string& id : drained.aborts) output_->abort(id);
  return drained.go_on;
}

void Engine::admit(InboxItem item) {
  GenerationRequest& r = item.request;
  if (r.params.min_tokens > 0) {
    // What min_tokens masks: every id that would stop the choice on its own.
    std::vector<int32_t>& banned = r.params.min_tokens_banned;
    if (!r.params.ignore_eos) banned.assign(tokenizer_.eos_ids().begin(), tokenizer_.eos_ids().end());
    banned.insert(banned.end(), r.stop_token_ids.begin(), r.stop_token_ids.end());
  }
  auto params = std::make_shared<const SamplingParams>(r.params);
  std::vector<SequencePtr> seqs = make_choices(r.request_id, r.prompt_tokens, params, item.arrival, r.priority);
  std::optional<Clock::time_point> deadline = r.deadline;
  if (!deadline && config_.default_deadline) deadline = item.arrival + *config_.default_deadline;
  const uint64_t group = std::hash<std::string>{}(r.group_id.empty() ? r.request_id : r.group_id);
  for (const SequencePtr& seq : seqs) {
    seq->set_embedding(r.embed);
    seq->set_fair_group(group);
    seq->set_fair_client(r.client_id);
    seq->set_deadline(deadline);
    seq->set_queue_deadline(r.queue_deadline);
  }
  RequestState& request =
      output_->add(r, std::move(item.stream), item.arrival, seqs, model_.hparams().embedding_length);
  const AddResult added = scheduler_->add(seqs);
  if (!added.ok()) {
    // submit() validated against the same limits, so this is not expected.
    spdlog::warn("engine {}: request {} refused by the scheduler: {}", config_.model_name, request.id, added.message);
    output_->refuse(request, added.message);
  }
}

void Engine::shutdown() {
  output_->abort_all("the server is shutting down");
  (void)scheduler_->schedule(Clock::now());  // reaps the aborted sequences and frees their blocks
  output_->reap_done();
  publish_stats(nullptr);
}

}  // namespace sluice::engine
