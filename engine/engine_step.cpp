// The engine thread's per-step work: admission, sampling, detokenization, stop
// checks, events, and the end of requests (logs and observer callbacks).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <utility>

#include "backends/check.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"

namespace sluice::engine {
namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

Engine::ActiveRequest* Engine::find(const SequencePtr& seq) {
  auto it = active_.find(seq->request_id());
  if (it == active_.end()) return nullptr;
  ActiveRequest& request = *it->second;
  const auto index = static_cast<size_t>(seq->choice_index());
  if (index >= request.choices.size() || request.choices[index]->seq != seq) return nullptr;
  return &request;
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
  auto request = std::make_unique<ActiveRequest>();
  request->id = r.request_id;
  request->stream = std::move(item.stream);
  request->arrival = item.arrival;
  request->wants_logprobs = r.params.logprobs.has_value();
  const uint64_t group = std::hash<std::string>{}(r.group_id.empty() ? r.request_id : r.group_id);
  for (const SequencePtr& seq : seqs) {
    seq->set_embedding(r.embed);
    seq->set_fair_group(group);
    seq->set_fair_client(r.client_id);
    seq->set_deadline(deadline);
    seq->set_queue_deadline(r.queue_deadline);
    request->choices.push_back(std::make_unique<ChoiceState>(seq, tokenizer_, r));
    if (r.embed) request->choices.back()->pooled.emplace(*r.embed, model_.hparams().embedding_length);
  }
  ActiveRequest& ref = *request;
  active_[r.request_id] = std::move(request);
  const AddResult added = scheduler_->add(seqs);
  if (!added.ok()) {
    // submit() validated against the same limits, so this is not expected.
    spdlog::warn("engine {}: request {} refused by the scheduler: {}", config_.model_name, ref.id, added.message);
    for (auto& choice : ref.choices) finish_choice(ref, *choice, FinishReason::error, added.message);
  }
}

void Engine::check_cancellations() {
  for (auto& [id, request] : active_)
    if (!request->done && request->stream->is_cancelled())
      abort_request(*request, FinishReason::abort, "cancelled by the client");
}

grammar::Matcher* Engine::matcher_of(const SequencePtr& seq) {
  ActiveRequest* request = find(seq);
  if (request == nullptr) return nullptr;
  ChoiceState& choice = *request->choices[static_cast<size_t>(seq->choice_index())];
  return choice.is_constrained() ? &*choice.matcher : nullptr;
}

// A step with a constrained row samples on the host: the masks are host-side.
bool Engine::has_grammar(const ScheduledStep& step) {
  for (const ScheduledSequence& scheduled : step.seqs)
    if (scheduled.samples && matcher_of(scheduled.seq) != nullptr) return true;
  return false;
}

void Engine::sample_on_host(const ScheduledStep& step, std::vector<SampleResult>& results) {
  const std::span<const float> logits = runner_->run(step);
  sampling_rows_.clear();
  row_matchers_.clear();
  row_drafts_.clear();
  row_results_.clear();
  size_t num_results = 0;
  for (const ScheduledSequence& scheduled : step.seqs) {
    if (!scheduled.samples) continue;
    sampling_rows_.push_back(scheduled.seq.get());
    row_matchers_.push_back(matcher_of(scheduled.seq));
    if (row_matchers_.back() != nullptr) ++step_constrained_rows_;
    row_drafts_.push_back(&scheduled.draft_tokens);
    row_results_.push_back(num_results);
    num_results += 1 + scheduled.draft_tokens.size();
  }
  results.resize(num_results);
  row_errors_.assign(sampling_rows_.size(), {});
  row_num_emitted_.assign(sampling_rows_.size(), 0);
  // Rows in parallel on the backend's host threads. A row depends only on its own
  // logits, settings, history and random stream, so the split changes nothing but
  // the time; each range takes a sampler (and scratch) of its own. A constrained
  // row's grammar mask is computed here too, in parallel: it depends on that row's
  // matcher alone.
  std::atomic<size_t> next_sampler{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  model_.backend().host_parallel_for(static_cast<int64_t>(sampling_rows_.size()), [&](int64_t begin, int64_t end) {
    const size_t index = next_sampler.fetch_add(1) % samplers_.size();
    try {
      for (auto row = static_cast<size_t>(begin); row < static_cast<size_t>(end); ++row)
        sample_row(row, index, logits,
                   std::span(results).subspan(row_results_[row], 1 + row_drafts_[row]->size()));
    } catch (...) {  // the pool's threads must not throw: hand it to the engine thread
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
  if (!runner_->prompt_rows().empty()) score_prompts(step, logits);
  if (!runner_->hidden_rows().empty()) pool_embeddings(step);
}

// Embedding sequences: fold this step's final hidden rows into each one's pooling.
void Engine::pool_embeddings(const ScheduledStep& step) {
  const auto width = static_cast<size_t>(model_.hparams().embedding_length);
  const std::span<const float> hidden = runner_->hidden_states();
  for (const HiddenStateRows& rows : runner_->hidden_rows()) {
    const SequencePtr& seq = step.seqs[rows.seq_index].seq;
    ActiveRequest* request = find(seq);
    if (request == nullptr) continue;
    ChoiceState& choice = *request->choices[static_cast<size_t>(seq->choice_index())];
    if (choice.finished || !choice.pooled) continue;
    choice.pooled->add(rows.first_position, hidden.subspan(rows.first_row * width, rows.num_rows * width),
                       seq->num_prompt_tokens());
  }
}

ChoiceDelta& Engine::pending_delta(ActiveRequest& request, ChoiceState& choice) {
  choice.pending.index = choice.seq->choice_index();
  if (!choice.has_pending) {
    choice.has_pending = true;
    if (!request.dirty) {
      request.dirty = true;
      dirty_.push_back(&request);
    }
  }
  return choice.pending;
}

// Prompt log-probabilities: each scoring row's raw distribution, at the prompt token
// that follows. Positions sent before (a preempted prefill computed again) are skipped.
void Engine::score_prompts(const ScheduledStep& step, std::span<const float> logits) {
  const auto vocab = static_cast<size_t>(runner_->vocab_size());
  for (const PromptLogitRows& rows : runner_->prompt_rows()) {
    const SequencePtr& seq = step.seqs[rows.seq_index].seq;
    ActiveRequest* request = find(seq);
    if (request == nullptr) continue;
    ChoiceState& choice = *request->choices[static_cast<size_t>(seq->choice_index())];
    if (choice.finished) continue;
    const int32_t num_top = seq->params().prompt_logprobs.value_or(0);
    for (size_t k = 0; k < rows.num_rows; ++k) {
      const int64_t position = rows.first_position + 1 + static_cast<int64_t>(k);
      if (position < choice.num_prompt_scored) continue;
      const int32_t token = seq->tokens()[static_cast<size_t>(position)];
      SampleResult scored = samplers_[0]->score(logits.subspan((rows.first_row + k) * vocab, vocab), token, num_top);
      pending_delta(*request, choice)
          .prompt_logprobs.push_back(TokenLogprobs{.token = token, .logprob = scored.logprob,
                                                   .top = std::move(scored.top_logprobs)});
      choice.num_prompt_scored = position + 1;
    }
  }
}

// The logits stay on the device; the host resolves each row's history-dependent
// processors and random draw first, and gets back only the chosen tokens.
void Engine::sample_on_device(const ScheduledStep& step, std::vector<SampleResult>& results) {
  device_rows_.clear();
  device_adjust_.clear();
  device_adjust_ends_.clear();  // each row's entries end here in device_adjust_
  for (const ScheduledSequence& scheduled : step.seqs) {
    if (!scheduled.samples) continue;
    Sequence& seq = *scheduled.seq;
    device_rows_.push_back(
        samplers_[0]->device_row(seq.params(), seq.prompt_tokens(), seq.output_tokens(), seq.rng(), device_adjust_));
    device_adjust_ends_.push_back(device_adjust_.size());
  }
  size_t first = 0;
  for (size_t i = 0; i < device_rows_.size(); ++i) {
    device_rows_[i].adjust = std::span(device_adjust_).subspan(first, device_adjust_ends_[i] - first);
    first = device_adjust_ends_[i];
  }
  device_tokens_.resize(device_rows_.size());
  runner_->run_and_sample(step, device_rows_, device_tokens_);
  size_t row = 0;
  row_results_.clear();
  for (const ScheduledSequence& scheduled : step.seqs) {
    if (!scheduled.samples) continue;
    row_results_.push_back(results.size());
    results.push_back(Sampler::from_device(device_tokens_[row++], scheduled.seq->params()));
  }
  row_num_emitted_.assign(row_results_.size(), 1);
  row_errors_.clear();
}

// Drafts are verified on the host: each drafted row samples under a history (and a
// grammar state) that only the rows before it decide.
bool Engine::has_drafts(const ScheduledStep& step) {
  return std::ranges::any_of(step.seqs, [](const ScheduledSequence& s) { return !s.draft_tokens.empty(); });
}

void Engine::run_step(ScheduledStep& step) {
  std::vector<SampleResult> results;
  results.reserve(static_cast<size_t>(step.num_sampling));
  if (runner_->samples_on_device() && !ModelRunner::scores_prompt(step) && !ModelRunner::embeds(step) &&
      !has_grammar(step) && !has_drafts(step)) {
    sample_on_device(step, results);
  } else {
    sample_on_host(step, results);
  }
  // update() takes each row's first token; the accepted drafts' tokens follow in emit_tokens.
  std::vector<int32_t> sampled;
  sampled.reserve(row_results_.size());
  for (size_t first : row_results_) sampled.push_back(results[first].token);
  const std::vector<SequencePtr> finished = scheduler_->update(step, sampled);  // appends; finishes on length
  for (const SequencePtr& seq : finished)
    if (seq->is_embedding()) finish_embedding(seq);
  const Clock::time_point now = Clock::now();
  size_t next = 0;
  for (const ScheduledSequence& scheduled : step.seqs) {
    if (!scheduled.samples) continue;
    const size_t row = next++;
    const auto tokens = std::span(results).subspan(row_results_[row], row_num_emitted_[row]);
    ActiveRequest* request = find(scheduled.seq);
    ChoiceState* choice =
        request == nullptr ? nullptr : request->choices[static_cast<size_t>(scheduled.seq->choice_index())].get();
    learn_from_verification(choice, scheduled.draft_tokens.size(), tokens.size());
    if (choice != nullptr && !choice->finished) {
      if (row < row_errors_.size() && !row_errors_[row].empty()) {
        fail_grammar(*request, *choice, row_errors_[row]);
      } else {
        emit_tokens(*request, *choice, tokens, now);
      }
    }
    if (!scheduled.draft_tokens.empty()) scheduler_->release_rejected_drafts(*scheduled.seq);
  }
}

// An embedding whose prompt is computed: its pooled vector goes out with its finish.
void Engine::finish_embedding(const SequencePtr& seq) {
  ActiveRequest* request = find(seq);
  if (request == nullptr) return;
  ChoiceState& choice = *request->choices[static_cast<size_t>(seq->choice_index())];
  if (choice.finished || !choice.pooled) return;
  if (!choice.pooled->is_complete(seq->num_prompt_tokens())) {
    finish_choice(*request, choice, FinishReason::error, "embedding: rows of the input are missing");
    return;
  }
  choice.embedding = choice.pooled->finish(seq->num_prompt_tokens());
  finish_choice(*request, choice, FinishReason::stop);
}

// A grammar that outgrew the matcher's limits ends its own choice with "error"; the
// rest of the step goes on.
void Engine::fail_grammar(ActiveRequest& request, ChoiceState& choice, const std::string& what) {
  scheduler_->finish(choice.seq, FinishReason::error);
  finish_choice(request, choice, FinishReason::error, "structured output: " + what);
}

// A lazy grammar (tool_choice auto) starts where its trigger appears: the grammar
// takes the output from the trigger's first byte, and masks every token after. Output
// the grammar cannot take from there (a trigger inside a token that goes on with
// something else) leaves the choice unconstrained: free text stays free.
void Engine::start_lazy_grammar(ChoiceState& choice, int32_t token) {
  std::optional<std::string> started = choice.trigger->push(tokenizer_.token_to_piece(token));
  if (!started) return;
  choice.trigger.reset();
  if (!choice.matcher->accept_bytes(*started)) {
    spdlog::debug("engine {}: a lazy grammar's trigger was followed by text it refuses; unconstrained",
                  config_.model_name);
    choice.matcher.reset();
  }
}

void Engine::postprocess(ActiveRequest& request, ChoiceState& choice, const SampleResult& sample,
                         Clock::time_point now) {
  Sequence& seq = *choice.seq;
  if (!choice.first_token_time) {
    choice.first_token_time = now;
    if (!request.first_token) {
      request.first_token = now;
      if (observer_ != nullptr) observer_->on_first_token(seconds(now - request.arrival));
    }
  } else if (observer_ != nullptr) {
    observer_->on_inter_token_latency(seconds(now - choice.last_token_time));
  }
  choice.last_token_time = now;

  // A token the grammar cannot take comes only from an empty mask (the grammar is
  // complete and EOS is banned by ignore_eos or min_tokens): the output is whole, stop
  // without it.
  bool accepted = true;
  try {
    if (choice.is_constrained()) {
      accepted = choice.matcher->accept_token(sample.token);
    } else if (choice.trigger) {
      start_lazy_grammar(choice, sample.token);
    }
  } catch (const grammar::GrammarError& e) {
    fail_grammar(request, choice, e.what());
    return;
  }
  if (!accepted) {
    ChoiceDelta& delta = pending_delta(request, choice);
    delta.text += choice.stop.finish(choice.detokenizer.flush()).text;
    scheduler_->finish(choice.seq, FinishReason::stop);
    finish_choice(request, choice, FinishReason::stop);
    return;
  }

  ChoiceDelta& delta = pending_delta(request, choice);
  delta.token_ids.push_back(sample.token);
  if (request.wants_logprobs)
    delta.logprobs.push_back(TokenLogprobs{.token = sample.token, .logprob = sample.logprob, .top = sample.top_logprobs});

  StopChecker::Result result = choice.stop.push(sample.token, choice.detokenizer.push(sample.token));
  delta.text += result.text;
  if (result.stopped) {
    if (result.matched_stop.empty()) delta.text += choice.detokenizer.flush();  // EOS: no more bytes come
    scheduler_->finish(choice.seq, FinishReason::stop);
    finish_choice(request, choice, FinishReason::stop, {}, result.matched_stop);
    return;
  }
  if (choice.is_constrained() && choice.matcher->is_finished() && !seq.is_finished()) {  // EOS, even with ignore_eos
    delta.text += choice.stop.finish(choice.detokenizer.flush()).text;
    scheduler_->finish(choice.seq, FinishReason::stop);
    finish_choice(request, choice, FinishReason::stop);
    return;
  }
  if (seq.is_finished()) {  // length, from Scheduler::update
    StopChecker::Result last = choice.stop.finish(choice.detokenizer.flush());
    delta.text += last.text;
    if (last.stopped) {
      scheduler_->finish(choice.seq, FinishReason::stop);
      finish_choice(request, choice, FinishReason::stop, {}, last.matched_stop);
    } else {
      finish_choice(request, choice, seq.finish_reason());
    }
  }
}

void Engine::finish_choice(ActiveRequest& request, ChoiceState& choice, FinishReason reason, std::string error,
                           std::string matched_stop) {
  if (choice.finished) return;
  choice.finished = true;
  if (reason == FinishReason::timeout) {
    // A deadline ends the choice with what it generated: the text held back for a
    // possible stop string or an unfinished character is released, as at "length".
    std::string rest = choice.stop.finish(choice.detokenizer.flush()).text;
    if (!rest.empty()) {
      choice.pending.index = choice.seq->choice_index();
      choice.pending.text += rest;
      choice.has_pending = true;
    }
  }
  if (choice.has_pending) {
    choice.has_pending = false;
    if (!request.stream->push_delta(std::move(choice.pending))) {
      reason = FinishReason::abort;
      error = "the consumer fell behind: its event stream is full";
    }
    choice.pending = {};
  }
  const Sequence& seq = *choice.seq;
  request.stream->push_finish(ChoiceFinish{.index = seq.choice_index(),
                                           .reason = reason,
                                           .num_prompt_tokens = seq.num_prompt_tokens(),
                                           .num_completion_tokens = seq.num_output_tokens(),
                                           .num_cached_tokens = seq.num_cached_tokens(),
                                           .matched_stop = std::move(matched_stop),
                                           .error = std::move(error),
                                           .queue_timeout = seq.timed_out_in_queue(),
                                           .embedding = std::move(choice.embedding)});
  ++request.num_finished;
  request.last_finish = Clock::now();
  if (request.is_done()) on_request_done(request);
}

void Engine::abort_request(ActiveRequest& request, FinishReason reason, const std::string& error) {
  scheduler_->abort(request.id, reason);  // blocks are freed at the next schedule()
  for (auto& choice : request.choices) {
    choice->has_pending = false;  // the consumer will not read it anyway
    choice->pending = {};
    finish_choice(request, *choice, reason, error);
  }
}

void Engine::flush_deltas() {
  for (ActiveRequest* request : dirty_) {
    request->dirty = false;
    if (request->done) continue;
    for (auto& choice : request->choices) {
      if (!choice->has_pending || choice->finished) continue;
      choice->has_pending = false;
      if (!request->stream->push_delta(std::move(choice->pending))) {
        spdlog::warn("engine {}: request {} aborted: its consumer fell behind ({} events buffered)",
                     config_.model_name, request->id, request->stream->capacity());
        abort_request(*request, FinishReason::abort, "the consumer fell behind: its event stream is full");
        break;
      }
      choice->pending = {};
    }
  }
  dirty_.clear();
}

void Engine::on_request_done(ActiveRequest& request) {
  request.done = true;
  RequestMetrics m;
  m.request_id = request.id;
  const Sequence& first = *request.choices.front()->seq;
  m.num_prompt_tokens = first.num_prompt_tokens();
  m.num_cached_tokens = first.num_cached_tokens();
  int64_t num_later_tokens = 0;  // after each choice's first
  for (const auto& choice : request.choices) {
    m.finish_reasons.push_back(choice->seq->is_finished() ? choice->seq->finish_reason() : FinishReason::abort);
    m.num_generation_tokens += choice->seq->num_output_tokens();
    num_later_tokens += std::max<int64_t>(0, choice->seq->num_output_tokens() - 1);
  }
  if (first.first_scheduled_time()) m.queue_time_s = seconds(*first.first_scheduled_time() - request.arrival);
  if (request.first_token) {
    m.ttft_s = seconds(*request.first_token - request.arrival);
    if (first.first_scheduled_time()) m.prefill_time_s = seconds(*request.first_token - *first.first_scheduled_time());
    m.decode_time_s = seconds(request.last_finish - *request.first_token);
    if (num_later_tokens > 0)
      m.time_per_output_token_s =
          m.decode_time_s * static_cast<double>(request.choices.size()) / static_cast<double>(num_later_tokens);
  }
  m.e2e_s = seconds(request.last_finish - request.arrival);
  const double rate = m.decode_time_s > 0 ? static_cast<double>(m.num_generation_tokens) / m.decode_time_s : 0.0;
  std::string reasons;
  for (FinishReason reason : m.finish_reasons) {
    if (!reasons.empty()) reasons += ',';
    reasons += to_string(reason);
  }
  spdlog::info("request {} finished ({}): prompt {} ({} cached), generated {} over {} choice(s), queue {:.1f} ms, "
               "ttft {:.1f} ms, e2e {:.1f} ms, {:.1f} tok/s",
               m.request_id, reasons, m.num_prompt_tokens, m.num_cached_tokens, m.num_generation_tokens,
               request.choices.size(), m.queue_time_s * 1e3, m.ttft_s * 1e3, m.e2e_s * 1e3, rate);
  if (observer_ != nullptr) observer_->on_request_finished(m);
  shell_.release(request.id);
}

void Engine::reap_done() {
  std::erase_if(active_, [](const auto& entry) { return entry.second->done; });
}

}  // namespace sluice::engine
