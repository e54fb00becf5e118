#pragma once
// The engine thread's state of one request in flight and of each of its choices:
// what turns sampled tokens into the request's events (detokenizer, stop checks,
// grammar matcher, the delta of this step) and the timing its metrics report.
// OutputProcessor owns them; a choice's Sequence points back at its ChoiceState
// (Sequence::choice_state) for as long as the state lives, so a step's rows reach
// their output state without a lookup.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/grammar/matcher.h"
#include "engine/grammar_trigger.h"
#include "engine/pooling.h"
#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/scheduling/sequence.h"
#include "engine/speculative/draft_pacing.h"
#include "engine/stop_checker.h"
#include "engine/tokenizer/detokenizer.h"

namespace sluice::engine {

struct RequestState;

class ChoiceState {
 public:
  ChoiceState(RequestState& owner, SequencePtr sequence, const tokenizer::Tokenizer& tokenizer,
              const GenerationRequest& r)
      : request(owner),
        seq(std::move(sequence)),
        detokenizer(tokenizer, r.skip_special_tokens),
        stop(StopOptions{.strings = r.stop,
                         .eos_ids = std::vector<int32_t>(tokenizer.eos_ids().begin(), tokenizer.eos_ids().end()),
                         .ignore_eos = r.params.ignore_eos,
                         .token_ids = r.stop_token_ids,
                         .min_tokens = r.params.min_tokens,
                         .include_stop_str = r.include_stop_str_in_output}),
        may_speculate(r.speculative) {
    if (r.grammar) matcher.emplace(r.grammar);
    if (r.grammar && r.grammar_trigger) trigger.emplace(*r.grammar_trigger);
    seq->set_choice_state(this);
  }
  ~ChoiceState() { seq->set_choice_state(nullptr); }
  ChoiceState(const ChoiceState&) = delete;
  ChoiceState& operator=(const ChoiceState&) = delete;

  // The grammar masks this choice's next token (a lazy one only once triggered).
  bool is_constrained() const { return matcher && !trigger; }

  RequestState& request;
  SequencePtr seq;
  std::optional<grammar::Matcher> matcher;  // structured output: this choice's place in the grammar
  std::optional<TriggerWatch> trigger;      // a lazy grammar not started yet
  tokenizer::IncrementalDetokenizer detokenizer;
  StopChecker stop;
  bool may_speculate = true;  // the request did not opt out of speculative decoding
  DraftPacing drafts;         // speculative decoding: how long this choice's next draft is
  bool finished = false;
  ChoiceDelta pending;  // output of this step, pushed by OutputProcessor::flush_deltas
  bool has_pending = false;
  std::optional<PooledEmbedding> pooled;  // an embedding request: its rows so far
  std::vector<float> embedding;           // ... and its vector, sent with the finish
  int64_t num_prompt_scored = 1;  // prompt tokens [1, this) were sent (a recompute sends none again)
  std::optional<Clock::time_point> first_token_time;
  Clock::time_point last_token_time;
};

struct RequestState {
  std::string id;
  std::shared_ptr<RequestStream> stream;
  Clock::time_point arrival;
  bool wants_logprobs = false;
  std::vector<std::unique_ptr<ChoiceState>> choices;
  int32_t num_finished = 0;
  bool dirty = false;  // listed for flush_deltas
  bool done = false;   // every choice finished; erased at the end of the loop iteration
  Clock::time_point last_finish;
  std::optional<Clock::time_point> first_token;  // of any choice

  bool is_done() const { return num_finished == static_cast<int32_t>(choices.size()); }
};

// The grammar that masks this sequence's next token, or null (none, not triggered
// yet, or the request ended).
inline grammar::Matcher* constraining_matcher(const Sequence& seq) {
  ChoiceState* choice = seq.choice_state();
  return choice != nullptr && choice->is_constrained() ? &*choice->matcher : nullptr;
}

}  // namespace sluice::engine
