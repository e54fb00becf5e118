// Speculative decoding on the engine thread: drafting before each schedule(), the
// verification of a sequence's drafted rows, and the emission of what was accepted.
//
// Verification samples the target at each drafted position exactly as plain decoding
// would (same processors, same mask, same history, same one random draw per token)
// and keeps a draft while it equals that sample. For a point-mass draft this is the
// standard rejection rule: draft d is accepted with probability p_target(d), and on a
// rejection the token is a draw from p_target with d removed, renormalised. It also
// makes the output the plain decoder's, token for token, greedy or seeded: a row's
// logits do not depend on what else the step computes (batch invariance), so only
// the speed changes with speculation.
#include <algorithm>
#include <optional>

#include "backends/check.h"
#include "engine/engine.h"
#include "engine/engine_internal.h"

namespace sluice::engine {

bool Engine::may_draft(const SequencePtr& seq) {
  if (!seq->is_decoding() || seq->is_embedding()) return false;
  ActiveRequest* request = find(seq);
  if (request == nullptr) return false;
  const ChoiceState& choice = *request->choices[static_cast<size_t>(seq->choice_index())];
  // A lazy grammar may start inside the drafts, and the rows after its trigger would
  // need masks that only postprocess() knows how to begin.
  return choice.may_speculate && !choice.finished && !choice.trigger;
}

void Engine::propose_drafts() {
  const SpeculativeConfig& spec = config_.speculative;
  const std::vector<SequencePtr>& running = scheduler_->running();
  for (const SequencePtr& seq : running) seq->clear_draft_tokens();
  // Many decoding rows already share each pass over the weights: drafts would
  // mostly add work there (speculative_config.h).
  const auto num_decoding = std::ranges::count_if(running, [](const SequencePtr& seq) { return seq->is_decoding(); });
  if (num_decoding == 0 || num_decoding > spec.disable_by_batch_size) return;
  draft_requests_.clear();
  for (const SequencePtr& seq : running) {
    if (!may_draft(seq)) continue;
    // Never more than the request may still emit (a verified step emits the drafts
    // it accepts and one token more), nor past the context.
    const int64_t room = std::min(seq->max_output_tokens(max_model_len_) - seq->num_output_tokens(),
                                  max_model_len_ - seq->num_tokens()) - 1;
    ChoiceState& choice = *find(seq)->choices[static_cast<size_t>(seq->choice_index())];
    if (choice.draft_pause > 0) {
      --choice.draft_pause;
      continue;
    }
    const int32_t length = choice.draft_length > 0 ? choice.draft_length : spec.num_speculative_tokens;
    const auto max_tokens = static_cast<int32_t>(std::min<int64_t>(length, room));
    if (max_tokens <= 0) continue;
    draft_requests_.push_back({.seq = seq.get(), .max_tokens = max_tokens, .draft = &seq->mutable_draft_tokens()});
  }
  if (!draft_requests_.empty()) drafter_->propose(draft_requests_);
}

// One sampling row of the step: its token, or with drafts, its tokens up to the first
// draft the target does not confirm. Runs on a host thread; touches only this row's
// sequence, matcher copy and the sampler's scratch. Writes out[0, emitted) and
// row_num_emitted_[row].
void Engine::sample_row(size_t row, size_t sampler_index, std::span<const float> logits,
                        std::span<SampleResult> out) {
  Sampler& sampler = *samplers_[sampler_index];
  std::vector<uint64_t>& mask = masks_[sampler_index];
  Sequence& seq = *sampling_rows_[row];
  const std::vector<int32_t>& drafts = *row_drafts_[row];
  const auto vocab = static_cast<size_t>(runner_->vocab_size());
  const size_t first_logit_row = runner_->sample_rows()[row];

  // Penalties see each drafted position's history: the output, then the drafts
  // before it (all confirmed, or we would have stopped).
  std::span<const int32_t> history = seq.output_tokens();
  if (!drafts.empty()) {
    std::vector<int32_t>& extended = histories_[sampler_index];
    extended.assign(history.begin(), history.end());
    extended.insert(extended.end(), drafts.begin(), drafts.end());
    history = extended;
  }
  // The grammar's state at each drafted position, walked on a copy: the choice's own
  // matcher advances in postprocess(), token by token, as without drafts.
  std::optional<grammar::Matcher> walker;
  if (row_matchers_[row] != nullptr) walker.emplace(*row_matchers_[row]);

  size_t emitted = 0;
  for (size_t j = 0; j <= drafts.size(); ++j) {
    std::span<const uint64_t> allowed;
    if (walker) {
      const size_t words = grammar::Matcher::mask_words(walker->grammar().tokens().vocab_size());
      mask.assign(std::max(grammar::Matcher::mask_words(static_cast<int32_t>(vocab)), words), 0);
      try {
        walker->fill_mask(std::span(mask).first(words));
        allowed = mask;
      } catch (const grammar::GrammarError& e) {  // a grammar past the matcher's limits: this row only
        row_errors_[row] = e.what();
      }
    }
    out[j] = sampler.sample(logits.subspan((first_logit_row + j) * vocab, vocab), seq.params(), seq.prompt_tokens(),
                            history.first(seq.output_tokens().size() + j), seq.rng(), allowed);
    emitted = j + 1;
    if (!row_errors_[row].empty() || j == drafts.size() || out[j].token != drafts[j]) break;
    // A draft the grammar refuses was masked, so it was not sampled: it never gets here.
    if (walker && (!walker->accept_token(drafts[j]) || walker->is_finished())) break;
  }
  row_num_emitted_[row] = emitted;
}

// Counts a verification and sets the sequence's next draft length. Each drafted
// token costs a row of the model's step whether accepted or not: at one stream the
// rows are nearly free (the weights are read once for all of them), but drafts that
// keep failing are not. So a rejection shortens the next draft to what was accepted
// plus one (one token: a cheap probe), and a draft accepted whole lengthens the next
// by one, up to k; a draft with nothing accepted pauses drafting (see below).
void Engine::learn_from_verification(ChoiceState* choice, size_t num_drafts, size_t num_emitted) {
  if (num_drafts == 0) return;
  const size_t num_accepted = num_emitted - 1;  // the last token is the target's own
  if (choice != nullptr) {
    const int32_t k = config_.speculative.num_speculative_tokens;
    choice->draft_length = num_accepted == num_drafts ? std::min<int32_t>(k, static_cast<int32_t>(num_drafts) + 1)
                                                      : static_cast<int32_t>(num_accepted) + 1;
    // Nothing accepted: text that does not repeat itself here. Decode plainly for
    // 1, 2, 4 ... 32 steps before drafting again.
    choice->num_draft_misses = num_accepted == 0 ? std::min(choice->num_draft_misses + 1, 6) : 0;
    choice->draft_pause = num_accepted == 0 ? (1 << (choice->num_draft_misses - 1)) : 0;
  }
  ++speculation_stats_.num_drafts;
  speculation_stats_.num_draft_tokens += num_drafts;
  speculation_stats_.num_accepted_tokens += num_accepted;
  auto& per_pos = speculation_stats_.num_accepted_tokens_per_pos;
  for (size_t pos = 0; pos < num_accepted && pos < per_pos.size(); ++pos) ++per_pos[pos];
}

// The tokens one row emits, after update() appended the first: each later one first
// commits the draft before it in the scheduler, so stop strings, EOS, grammars and
// max_tokens see the same sequence of single tokens as plain decoding, and whatever
// follows the token that ends the choice is dropped.
void Engine::emit_tokens(ActiveRequest& request, ChoiceState& choice, std::span<const SampleResult> tokens,
                         Clock::time_point now) {
  for (size_t j = 0; j < tokens.size(); ++j) {
    if (choice.finished) return;
    if (j > 0) {
      if (choice.seq->is_finished()) return;  // length: update() or commit_draft() ended it
      scheduler_->commit_draft(choice.seq, tokens[j].token);
    }
    postprocess(request, choice, tokens[j], now);
  }
}

}  // namespace sluice::engine
