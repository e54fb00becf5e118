#pragma once
// The engine thread's output side: owns every request in flight and its choices'
// state (choice_state.h), turns what a step sampled into each request's events
// (detokenized text, stop strings, grammar advance, log-probabilities, prompt scores,
// embeddings), batches them into one delta per choice and step, and ends choices and
// requests (finish events, metrics, the log line, the observer's callbacks).
//
// It tells the scheduler what ends a sequence (finish, abort) and commits accepted
// drafts; it never schedules. Only the engine thread calls it.
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/choice_state.h"
#include "engine/engine_stats.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/scheduling/scheduler.h"
#include "engine/step_sampler.h"
#include "engine/tokenizer/tokenizer.h"

namespace sluice::engine {

class OutputProcessor {
 public:
  // on_released(id): the request ended and its id may be used again (the shell's).
  OutputProcessor(const tokenizer::Tokenizer& tokenizer, Scheduler& scheduler, EngineObserver* observer,
                  std::string model_name, std::function<void(const std::string&)> on_released);

  // A request the scheduler is about to take: its state, one choice per sequence.
  RequestState& add(const GenerationRequest& request, std::shared_ptr<RequestStream> stream,
                    Clock::time_point arrival, std::span<const SequencePtr> seqs, int64_t embedding_length);

  // The scheduler refused the request's sequences: each choice ends with "error".
  void refuse(RequestState& request, const std::string& error);

  // What a step sampled for the row of `seq` (tokens: its first, appended by
  // Scheduler::update, then accepted drafts), or the row's grammar failure.
  void emit(const Sequence& seq, std::span<const SampleResult> tokens, const std::string* error,
            Clock::time_point now);
  // Prompt log-probabilities of the step's scoring rows, from the step's logits.
  void score_prompts(const ScheduledStep& step, const ModelRunner& runner, std::span<const float> logits,
                     StepSampler& sampler);
  // Embedding sequences: fold the step's final hidden rows into each one's pooling.
  void pool_embeddings(const ScheduledStep& step, const ModelRunner& runner, int64_t width);
  // An embedding whose prompt is computed: its pooled vector goes out with its finish.
  void finish_embedding(const Sequence& seq);
  // A sequence the scheduler ended (aborted, timed out) or one that failed.
  void finish_scheduled(const Sequence& seq);

  void check_cancellations();                     // requests whose consumer cancelled end with "abort"
  bool abort(std::string_view request_id);        // false: not in flight
  void fail_step(const ScheduledStep& step, const std::string& what);  // its requests end with "error"
  void abort_all(const std::string& error);       // every request ends with "abort"
  void fail_all(const std::string& error);        // every request ends with "error"; nothing is kept
  void flush_deltas();                            // pushes this step's deltas
  void reap_done();                               // drops requests whose choices all finished
  int32_t num_active() const { return static_cast<int32_t>(active_.size()); }
  bool empty() const { return active_.empty(); }

 private:
  void postprocess(ChoiceState& choice, const SampleResult& sample, Clock::time_point now);
  void start_lazy_grammar(ChoiceState& choice, int32_t token);
  void fail_grammar(ChoiceState& choice, const std::string& what);
  ChoiceDelta& pending_delta(ChoiceState& choice);
  void finish(ChoiceState& choice, FinishReason reason, std::string error = {}, std::string matched_stop = {});
  void end_request(RequestState& request, FinishReason reason, const std::string& error);
  void on_request_done(RequestState& request);

  const tokenizer::Tokenizer& tokenizer_;
  Scheduler& scheduler_;
  EngineObserver* observer_;
  std::string model_name_;
  std::function<void(const std::string&)> on_released_;
  std::unordered_map<std::string, std::unique_ptr<RequestState>> active_;
  std::vector<RequestState*> dirty_;  // requests with a delta to push this step
};

}  // namespace sluice::engine
