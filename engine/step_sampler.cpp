#include "engine/step_sampler.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <optional>

#include "engine/choice_state.h"
#include "engine/grammar/matcher.h"

namespace sluice::engine {
namespace {

// Drafts are verified on the host: each drafted row samples under a history (and a
// grammar state) that only the rows before it decide.
bool has_drafts(const ScheduledStep& step) {
  return std::ranges::any_of(step.seqs, [](const ScheduledSequence& s) { return !s.draft_tokens.empty(); });
}

// A step with a constrained row samples on the host: the masks are host-side.
bool has_grammar(const ScheduledStep& step) {
  return std::ranges::any_of(step.seqs, [](const ScheduledSequence& s) {
    return s.samples && constraining_matcher(*s.seq) != nullptr;
  });
}

}  // namespace

StepSampler::StepSampler(backends::Backend& backend, int32_t vocab_size, int num_samplers, DrawOrder draw_order)
    : backend_(backend) {
  for (int i = 0; i < std::max(1, num_samplers); ++i)
    samplers_.push_back(std::make_unique<Sampler>(vocab_size, draw_order));
  masks_.resize(samplers_.size());
  histories_.resize(samplers_.size());
}

const StepSamples& StepSampler::run(const ScheduledStep& step, ModelRunner& runner) {
  StepSamples& out = samples_;
  out.results.clear();
  out.results.reserve(static_cast<size_t>(step.num_sampling));
  out.first.clear();
  out.num_emitted.clear();
  out.errors.clear();
  out.logits = {};
  out.num_constrained = 0;
  if (runner.samples_on_device() && !ModelRunner::scores_prompt(step) && !ModelRunner::embeds(step) &&
      !has_grammar(step) && !has_drafts(step)) {
    sample_on_device(step, runner, out);
  } else {
    sample_on_host(step, runner, out);
  }
  return out;
}

SampleResult StepSampler::score(std::span<const float> logits, int32_t token, int32_t num_top) {
  return samplers_[0]->score(logits, token, num_top);
}

void StepSampler::sample_on_host(const ScheduledStep& step, ModelRunner& runner, StepSamples& out) {
  out.logits = runner.run(step);
  rows_.clear();
  row_matchers_.clear();
  row_drafts_.clear();
  size_t num_results = 0;
  for (const ScheduledSequence& scheduled : step.seqs) {
    if (!scheduled.samples) continue;
    rows_.push_back(scheduled.seq.get());
    row_matchers_.push_back(constraining_matcher(*scheduled.seq));
    if (row_matchers_.back() != nullptr) ++out.num_constrained;
    row_drafts_.push_back(&scheduled.draft_tokens);
    out.first.push_back(num_results);
    num_results += 1 + scheduled.draft_tokens.size();
  }
  out.results.resize(num_results);
  out.errors.assign(rows_.size(), {});
  out.num_emitted.assign(rows_.size(), 0);
  // Rows in parallel on the backend's host threads. A row depends only on its own
  // logits, settings, history and random stream, so the split changes nothing but
  // the time; each range takes a sampler (and scratch) of its own. A constrained
  // row's grammar mask is computed here too, in parallel: it depends on that row's
  // matcher alone.
  std::atomic<size_t> next_sampler{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  backend_.host_parallel_for(static_cast<int64_t>(rows_.size()), [&](int64_t begin, int64_t end) {
    const size_t index = next_sampler.fetch_add(1) % samplers_.size();
    try {
      for (auto row = static_cast<size_t>(begin); row < static_cast<size_t>(end); ++row)
        sample_row(row, index, out.logits, runner, out);
    } catch (...) {  // the pool's threads must not throw: hand it to the engine thread
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
}

// One sampling row of the step: its token, or with drafts, its tokens up to the first
// draft the target does not confirm. Runs on a host thread; touches only this row's
// sequence, matcher copy, out's entries of this row and the sampler's scratch.
void StepSampler::sample_row(size_t row, size_t sampler_index, std::span<const float> logits,
                             const ModelRunner& runner, StepSamples& out) {
  Sampler& sampler = *samplers_[sampler_index];
  std::vector<uint64_t>& mask = masks_[sampler_index];
  Sequence& seq = *rows_[row];
  const std::vector<int32_t>& drafts = *row_drafts_[row];
  const auto vocab = static_cast<size_t>(runner.vocab_size());
  const size_t first_logit_row = runner.sample_rows()[row];
  const std::span<SampleResult> tokens = std::span(out.results).subspan(out.first[row], 1 + drafts.size());
  std::string& error = out.errors[row];

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
  // matcher advances in the output processor, token by token, as without drafts.
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
        error = e.what();
      }
    }
    tokens[j] = sampler.sample(logits.subspan((first_logit_row + j) * vocab, vocab), seq.params(),
                               seq.prompt_tokens(), history.first(seq.output_tokens().size() + j), seq.rng(), allowed);
    emitted = j + 1;
    if (!error.empty() || j == drafts.size() || tokens[j].token != drafts[j]) break;
    // A draft the grammar refuses was masked, so it was not sampled: it never gets here.
    if (walker && (!walker->accept_token(drafts[j]) || walker->is_finished())) break;
  }
  out.num_emitted[row] = emitted;
}

// The logits stay on the device; the host resolves each row's history-dependent
// processors and random draw first, and gets back only the chosen tokens.
void StepSampler::sample_on_device(const ScheduledStep& step, ModelRunner& runner, StepSamples& out) {
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
  runner.run_and_sample(step, device_rows_, device_tokens_);
  size_t row = 0;
  for (const ScheduledSequence& scheduled : step.seqs) {
    if (!scheduled.samples) continue;
    out.first.push_back(out.results.size());
    out.results.push_back(Sampler::from_device(device_tokens_[row++], scheduled.seq->params()));
  }
  out.num_emitted.assign(out.first.size(), 1);
}

}  // namespace sluice::engine
