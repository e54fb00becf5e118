#include "engine/output_processor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace sluice::engine {
namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

OutputProcessor::OutputProcessor(const tokenizer::Tokenizer& tokenizer, Scheduler& scheduler, EngineObserver* observer,
                                 std::string model_name, std::function<void(const std::string&)> on_released)
    : tokenizer_(tokenizer),
      scheduler_(scheduler),
      observer_(observer),
      model_name_(std::move(model_name)),
      on_released_(std::move(on_released)) {}

RequestState& OutputProcessor::add(const GenerationRequest& r, std::shared_ptr<RequestStream> stream,
                                   Clock::time_point arrival, std::span<const SequencePtr> seqs,
                                   int64_t embedding_length) {
  auto request = std::make_unique<RequestState>();
  request->id = r.request_id;
  request->stream = std::move(stream);
  request->arrival = arrival;
  request->wants_logprobs = r.params.logprobs.has_value();
  for (const SequencePtr& seq : seqs) {
    request->choices.push_back(std::make_unique<ChoiceState>(*request, seq, tokenizer_, r));
    if (r.embed) request->choices.back()->pooled.emplace(*r.embed, embedding_length);
  }
  RequestState& ref = *request;
  active_[r.request_id] = std::move(request);
  return ref;
}

void OutputProcessor::refuse(RequestState& request, const std::string& error) {
  for (auto& choice : request.choices) finish(*choice, FinishReason::error, error);
}

void OutputProcessor::emit(const Sequence& seq, std::span<const SampleResult> tokens, const std::string* error,
                           Clock::time_point now) {
  ChoiceState* choice = seq.choice_state();
  if (choice == nullptr || choice->finished) return;
  if (error != nullptr) {
    fail_grammar(*choice, *error);
    return;
  }
  // Each token after the first commits the draft before it in the scheduler, so stop
  // strings, EOS, grammars and max_tokens see the same sequence of single tokens as
  // plain decoding, and whatever follows the token that ends the choice is dropped.
  for (size_t j = 0; j < tokens.size(); ++j) {
    if (choice->finished) return;
    if (j > 0) {
      if (choice->seq->is_finished()) return;  // length: update() or commit_draft() ended it
      scheduler_.commit_draft(choice->seq, tokens[j].token);
    }
    postprocess(*choice, tokens[j], now);
  }
}

// Positions sent before (a preempted prefill computed again) are skipped.
void OutputProcessor::score_prompts(const ScheduledStep& step, const ModelRunner& runner,
                                    std::span<const float> logits, StepSampler& sampler) {
  const auto vocab = static_cast<size_t>(runner.vocab_size());
  for (const PromptLogitRows& rows : runner.prompt_rows()) {
    const Sequence& seq = *step.seqs[rows.seq_index].seq;
    ChoiceState* choice = seq.choice_state();
    if (choice == nullptr || choice->finished) continue;
    const int32_t num_top = seq.params().prompt_logprobs.value_or(0);
    for (size_t k = 0; k < rows.num_rows; ++k) {
      const int64_t position = rows.first_position + 1 + static_cast<int64_t>(k);
      if (position < choice->num_prompt_scored) continue;
      const int32_t token = seq.tokens()[static_cast<size_t>(position)];
      SampleResult scored = sampler.score(logits.subspan((rows.first_row + k) * vocab, vocab), token, num_top);
      pending_delta(*choice).prompt_logprobs.push_back(
          TokenLogprobs{.token = token, .logprob = scored.logprob, .top = std::move(scored.top_logprobs)});
      choice->num_prompt_scored = position + 1;
    }
  }
}

void OutputProcessor::pool_embeddings(const ScheduledStep& step, const ModelRunner& runner, int64_t width) {
  const auto row_width = static_cast<size_t>(width);
  const std::span<const float> hidden = runner.hidden_states();
  for (const HiddenStateRows& rows : runner.hidden_rows()) {
    const Sequence& seq = *step.seqs[rows.seq_index].seq;
    ChoiceState* choice = seq.choice_state();
    if (choice == nullptr || choice->finished || !choice->pooled) continue;
    choice->pooled->add(rows.first_position, hidden.subspan(rows.first_row * row_width, rows.num_rows * row_width),
                        seq.num_prompt_tokens());
  }
}

void OutputProcessor::finish_embedding(const Sequence& seq) {
  ChoiceState* choice = seq.choice_state();
  if (choice == nullptr || choice->finished || !choice->pooled) return;
  if (!choice->pooled->is_complete(seq.num_prompt_tokens())) {
    finish(*choice, FinishReason::error, "embedding: rows of the input are missing");
    return;
  }
  choice->embedding = choice->pooled->finish(seq.num_prompt_tokens());
  finish(*choice, FinishReason::stop);
}

void OutputProcessor::finish_scheduled(const Sequence& seq) {
  ChoiceState* choice = seq.choice_state();
  if (choice == nullptr) return;
  std::string why;
  if (seq.finish_reason() == FinishReason::timeout)
    why = seq.timed_out_in_queue() ? "the queue timeout passed before admission" : "the request deadline passed";
  finish(*choice, seq.finish_reason(), std::move(why));
}

ChoiceDelta& OutputProcessor::pending_delta(ChoiceState& choice) {
  choice.pending.index = choice.seq->choice_index();
  if (!choice.has_pending) {
    choice.has_pending = true;
    RequestState& request = choice.request;
    if (!request.dirty) {
      request.dirty = true;
      dirty_.push_back(&request);
    }
  }
  return choice.pending;
}

// A grammar that outgrew the matcher's limits ends its own choice with "error"; the
// rest of the step goes on.
void OutputProcessor::fail_grammar(ChoiceState& choice, const std::string& what) {
  scheduler_.finish(choice.seq, FinishReason::error);
  finish(choice, FinishReason::error, "structured output: " + what);
}

// A lazy grammar (tool_choice auto) starts where its trigger appears: the grammar
// takes the output from the trigger's first byte, and masks every token after. Output
// the grammar cannot take from there (a trigger inside a token that goes on with
// something else) leaves the choice unconstrained: free text stays free.
void OutputProcessor::start_lazy_grammar(ChoiceState& choice, int32_t token) {
  std::optional<std::string> started = choice.trigger->push(tokenizer_.token_to_piece(token));
  if (!started) return;
  choice.trigger.reset();
  if (!choice.matcher->accept_bytes(*started)) {
    spdlog::debug("engine {}: a lazy grammar's trigger was followed by text it refuses; unconstrained", model_name_);
    choice.matcher.reset();
  }
}

void OutputProcessor::postprocess(ChoiceState& choice, const SampleResult& sample, Clock::time_point now) {
  RequestState& request = choice.request;
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
    fail_grammar(choice, e.what());
    return;
  }
  if (!accepted) {
    ChoiceDelta& delta = pending_delta(choice);
    delta.text += choice.stop.finish(choice.detokenizer.flush()).text;
    scheduler_.finish(choice.seq, FinishReason::stop);
    finish(choice, FinishReason::stop);
    return;
  }

  ChoiceDelta& delta = pending_delta(choice);
  delta.token_ids.push_back(sample.token);
  if (request.wants_logprobs)
    delta.logprobs.push_back(TokenLogprobs{.token = sample.token, .logprob = sample.logprob, .top = sample.top_logprobs});

  StopChecker::Result result = choice.stop.push(sample.token, choice.detokenizer.push(sample.token));
  delta.text += result.text;
  if (result.stopped) {
    if (result.matched_stop.empty()) delta.text += choice.detokenizer.flush();  // EOS: no more bytes come
    scheduler_.finish(choice.seq, FinishReason::stop);
    finish(choice, FinishReason::stop, {}, result.matched_stop);
    return;
  }
  if (choice.is_constrained() && choice.matcher->is_finished() && !seq.is_finished()) {  // EOS, even with ignore_eos
    delta.text += choice.stop.finish(choice.detokenizer.flush()).text;
    scheduler_.finish(choice.seq, FinishReason::stop);
    finish(choice, FinishReason::stop);
    return;
  }
  if (seq.is_finished()) {  // length, from Scheduler::update
    StopChecker::Result last = choice.stop.finish(choice.detokenizer.flush());
    delta.text += last.text;
    if (last.stopped) {
      scheduler_.finish(choice.seq, FinishReason::stop);
      finish(choice, FinishReason::stop, {}, last.matched_stop);
    } else {
      finish(choice, seq.finish_reason());
    }
  }
}

void OutputProcessor::finish(ChoiceState& choice, FinishReason reason, std::string error, std::string matched_stop) {
  if (choice.finished) return;
  RequestState& request = choice.request;
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

void OutputProcessor::end_request(RequestState& request, FinishReason reason, const std::string& error) {
  scheduler_.abort(request.id, reason);  // blocks are freed at the next schedule()
  for (auto& choice : request.choices) {
    choice->has_pending = false;  // the consumer will not read it anyway
    choice->pending = {};
    finish(*choice, reason, error);
  }
}

void OutputProcessor::check_cancellations() {
  for (auto& [id, request] : active_)
    if (!request->done && request->stream->is_cancelled())
      end_request(*request, FinishReason::abort, "cancelled by the client");
}

bool OutputProcessor::abort(std::string_view request_id) {
  auto it = active_.find(std::string(request_id));
  if (it == active_.end() || it->second->done) return false;
  end_request(*it->second, FinishReason::abort, "aborted");
  return true;
}

void OutputProcessor::fail_step(const ScheduledStep& step, const std::string& what) {
  for (const ScheduledSequence& scheduled : step.seqs) {
    ChoiceState* choice = scheduled.seq->choice_state();
    if (choice != nullptr && !choice->request.done)
      end_request(choice->request, FinishReason::error, "the model step failed: " + what);
  }
}

void OutputProcessor::abort_all(const std::string& error) {
  for (auto& [id, request] : active_)
    if (!request->done) end_request(*request, FinishReason::abort, error);
}

void OutputProcessor::fail_all(const std::string& error) {
  for (auto& [id, request] : active_) {
    if (request->done) continue;
    // One request's finish failing (an observer that throws) must not leave the
    // others waiting for theirs.
    try {
      for (auto& choice : request->choices) {
        choice->has_pending = false;
        choice->pending = {};
        finish(*choice, FinishReason::error, error);
      }
    } catch (...) {
      spdlog::error("engine {}: finishing request {} failed", model_name_, id);
    }
  }
  dirty_.clear();
  active_.clear();
}

void OutputProcessor::flush_deltas() {
  for (RequestState* request : dirty_) {
    request->dirty = false;
    if (request->done) continue;
    for (auto& choice : request->choices) {
      if (!choice->has_pending || choice->finished) continue;
      choice->has_pending = false;
      if (!request->stream->push_delta(std::move(choice->pending))) {
        spdlog::warn("engine {}: request {} aborted: its consumer fell behind ({} events buffered)", model_name_,
                     request->id, request->stream->capacity());
        end_request(*request, FinishReason::abort, "the consumer fell behind: its event stream is full");
        break;
      }
      choice->pending = {};
    }
  }
  dirty_.clear();
}

void OutputProcessor::on_request_done(RequestState& request) {
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
  on_released_(request.id);
}

void OutputProcessor::reap_done() {
  std::erase_if(active_, [](const auto& entry) { return entry.second->done; });
}

}  // namespace sluice::engine
