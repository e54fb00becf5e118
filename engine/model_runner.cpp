#include "engine/model_runner.h"

#include <algorithm>
#include <utility>

#include "backends/check.h"

namespace sluice::engine {

ModelRunner::ModelRunner(Model& model, int64_t num_blocks, int64_t block_size, backends::DType kv_dtype)
    : model_(model),
      cache_(std::make_unique<KvCache>(model.backend(), model.hparams(),
                                       KvCacheConfig{.num_blocks = num_blocks, .block_size = block_size,
                                                     .dtype = kv_dtype})),
      vocab_size_(model.hparams().vocab_size) {}

namespace {

// The prompt positions of this chunk whose next token is a prompt token: [begin, end).
std::pair<int64_t, int64_t> prompt_scoring_span(const ScheduledSequence& scheduled) {
  if (!scheduled.seq->wants_prompt_logits()) return {0, 0};
  const int64_t begin = scheduled.start_position;
  const int64_t end = std::min(scheduled.start_position + scheduled.num_new_tokens,
                               scheduled.seq->num_prompt_tokens() - 1);
  return {begin, std::max(begin, end)};
}

}  // namespace

bool ModelRunner::scores_prompt(const ScheduledStep& step) {
  for (const ScheduledSequence& scheduled : step.seqs) {
    const auto [begin, end] = prompt_scoring_span(scheduled);
    if (end > begin) return true;
  }
  return false;
}

StepBatch ModelRunner::prepare(const ScheduledStep& step, bool with_prompt_rows) {
  SLUICE_CHECK(!step.empty(), "run needs a non-empty step");
  const size_t num_tokens = step.token_ids.size();
  slots_.resize(num_tokens);
  for (size_t i = 0; i < num_tokens; ++i) slots_[i] = static_cast<int32_t>(step.slot_mapping[i]);

  slices_.resize(step.seqs.size());
  logit_rows_.clear();
  sample_rows_.clear();
  prompt_rows_.clear();
  for (size_t s = 0; s < step.seqs.size(); ++s) {
    const ScheduledSequence& scheduled = step.seqs[s];
    backends::SequenceSlice& slice = slices_[s];
    slice.query_begin = static_cast<int32_t>(scheduled.query_start);
    slice.num_queries = static_cast<int32_t>(scheduled.num_new_tokens);
    slice.num_cached = static_cast<int32_t>(scheduled.start_position);
    slice.block_table.assign(scheduled.block_table.begin(), scheduled.block_table.end());
    const auto [begin, end] = with_prompt_rows ? prompt_scoring_span(scheduled) : std::pair<int64_t, int64_t>{0, 0};
    if (end > begin) {
      prompt_rows_.push_back({.seq_index = s, .first_position = begin, .first_row = logit_rows_.size(),
                              .num_rows = static_cast<size_t>(end - begin)});
      for (int64_t pos = begin; pos < end; ++pos)
        logit_rows_.push_back(static_cast<int32_t>(scheduled.query_start + (pos - scheduled.start_position)));
    }
    // The last row of a chunk that reaches the end of the sequence predicts its next token.
    if (scheduled.samples) {
      sample_rows_.push_back(logit_rows_.size());
      logit_rows_.push_back(static_cast<int32_t>(scheduled.query_start + scheduled.num_new_tokens - 1));
    }
  }
  SLUICE_CHECK(sample_rows_.size() == static_cast<size_t>(step.num_sampling), "sampling rows disagree with the step");
  return StepBatch{.token_ids = step.token_ids,
                   .positions = step.positions,
                   .kv_slots = slots_,
                   .sequences = slices_,
                   .logit_rows = logit_rows_};
}

std::span<const float> ModelRunner::run(const ScheduledStep& step) {
  const StepBatch batch = prepare(step, /*with_prompt_rows=*/true);
  logits_.resize(logit_rows_.size() * static_cast<size_t>(vocab_size_));
  model_.forward(batch, *cache_, logits_);
  return logits_;
}

bool ModelRunner::samples_on_device() const {
  return model_.backend().supports_sampling() && model_.hparams().final_softcap <= 0.0f;
}

void ModelRunner::run_and_sample(const ScheduledStep& step, std::span<const backends::RowSampling> rows,
                                 std::span<backends::SampledToken> out) {
  SLUICE_CHECK(samples_on_device(), "run_and_sample: the backend does not sample");
  const StepBatch batch = prepare(step, /*with_prompt_rows=*/false);
  SLUICE_CHECK(rows.size() == logit_rows_.size() && out.size() == rows.size(),
               "run_and_sample: one sampling row per sampling sequence");
  const backends::Tensor logits = model_.forward_on_device(batch, *cache_);
  if (!rows.empty()) model_.backend().sample(logits, rows, out);
  model_.backend().synchronize();
}

}  // namespace sluice::engine
