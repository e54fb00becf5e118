#pragma once
// The engine thread's bookkeeping of one request in flight. Private to engine*.cpp.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar_trigger.h"
#include "engine/pooling.h"
#include "engine/stop_checker.h"
#include "engine/tokenizer/detokenizer.h"

namespace sluice::engine {

struct Engine::ChoiceState {
  ChoiceState(SequencePtr s, const tokenizer::Tokenizer& tokenizer, const GenerationRequest& request)
      : seq(std::move(s)),
        detokenizer(tokenizer, request.skip_special_tokens),
        stop(StopOptions{.strings = request.stop,
                         .eos_ids = std::vector<int32_t>(tokenizer.eos_ids().begin(), tokenizer.eos_ids().end()),
                         .ignore_eos = request.params.ignore_eos,
                         .token_ids = request.stop_token_ids,
                         .min_tokens = request.params.min_tokens,
                         .include_stop_str = request.include_stop_str_in_output}),
        may_speculate(request.speculative) {
    if (request.grammar) matcher.emplace(request.grammar);
    if (request.grammar && request.grammar_trigger) trigger.emplace(*request.grammar_trigger);
  }

  // The grammar masks this choice's next token (a lazy one only once triggered).
  bool is_constrained() const { return matcher && !trigger; }

  SequencePtr seq;
  std::optional<grammar::Matcher> matcher;  // structured output: this choice's place in the grammar
  std::optional<TriggerWatch> trigger;      // a lazy grammar not started yet
  tokenizer::IncrementalDetokenizer detokenizer;
  StopChecker stop;
  bool may_speculate = true;  // the request did not opt out of speculative decoding
  // Drafted tokens to propose next (engine_speculation.cpp: grows while drafts are
  // accepted whole, falls back after a rejection). 0: not set yet (the config's k).
  int32_t draft_length = 0;
  // Steps to decode without drafts after drafts found nothing accepted; doubles with
  // each such miss in a row (a verifying step costs more than a plain one).
  int32_t draft_pause = 0;
  int32_t num_draft_misses = 0;
  bool finished = false;
  ChoiceDelta pending;  // output of this step, pushed by flush_deltas()
  bool has_pending = false;
  std::optional<PooledEmbedding> pooled;  // an embedding request: its rows so far
  std::vector<float> embedding;           // ... and its vector, sent with the finish
  int64_t num_prompt_scored = 1;  // prompt tokens [1, this) were sent (a recompute sends none again)
  std::optional<Clock::time_point> first_token_time;
  Clock::time_point last_token_time;
};

struct Engine::ActiveRequest {
  std::string id;
  std::shared_ptr<RequestStream> stream;
  Clock::time_point arrival;
  bool wants_logprobs = false;
  std::vector<std::unique_ptr<ChoiceState>> choices;
  int32_t num_finished = 0;
  bool dirty = false;  // listed in dirty_
  bool done = false;   // every choice finished; erased at the end of the loop iteration
  Clock::time_point last_finish;
  std::optional<Clock::time_point> first_token;  // of any choice

  bool is_done() const { return num_finished == static_cast<int32_t>(choices.size()); }
};

}  // namespace sluice::engine
