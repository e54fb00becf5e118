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
      vocab_size_(model.hparams().vocab_size),
      builder_(block_size) {}

namespace {

// The prompt positions of this chunk whose next token is a prompt token: [begin, end).
std::pair<int64_t, int64_t> prompt_scoring_span(const ScheduledSequence& scheduled) {
  if (!scheduled.seq->wants_prompt_logits()) return {0, 0};
  const int64_t begin = scheduled.start_position;
  const int64_t end = std::min(scheduled.start_position + scheduled.num_new_tokens,
                               scheduled.seq->num_prompt_tokens() - 1);
  return {begin, std::max(begin, end)};
}

// The rows an embedding sequence's pooling needs from this chunk: [begin, end) in
// positions (the last prompt position for `last`, every one for `mean`).
std::pair<int64_t, int64_t> pooled_span(const ScheduledSequence& scheduled) {
  const std::optional<Pooling>& pooling = scheduled.seq->embedding();
  if (!pooling) return {0, 0};
  const int64_t begin = scheduled.start_position;
  const int64_t end = std::min(begin + scheduled.num_new_tokens, scheduled.seq->num_prompt_tokens());
  if (*pooling == Pooling::mean) return {begin, std::max(begin, end)};
  const int64_t last = scheduled.seq->num_prompt_tokens() - 1;
  return last >= begin && last < end ? std::pair{last, last + 1} : std::pair<int64_t, int64_t>{0, 0};
}

}  // namespace

bool ModelRunner::embeds(const ScheduledStep& step) {
  return std::ranges::any_of(step.seqs, [](const ScheduledSequence& s) { return s.seq->is_embedding(); });
}

bool ModelRunner::scores_prompt(const ScheduledStep& step) {
  for (const ScheduledSequence& scheduled : step.seqs) {
    const auto [begin, end] = prompt_scoring_span(scheduled);
    if (end > begin) return true;
  }
  return false;
}

StepBatch ModelRunner::prepare(const ScheduledStep& step, bool with_prompt_rows) {
  SLUICE_CHECK(!step.empty(), "run needs a non-empty step");
  builder_.clear();
  sample_rows_.clear();
  prompt_rows_.clear();
  hidden_rows_.clear();
  for (size_t s = 0; s < step.seqs.size(); ++s) {
    const ScheduledSequence& scheduled = step.seqs[s];
    SLUICE_CHECK(static_cast<int64_t>(builder_.num_tokens()) == scheduled.query_start,
                 "the step's sequences are not contiguous");
    const size_t seq = builder_.add_sequence(
        std::span(step.token_ids).subspan(static_cast<size_t>(scheduled.query_start),
                                          static_cast<size_t>(scheduled.num_new_tokens)),
        scheduled.start_position, scheduled.block_table);
    const auto [begin, end] = with_prompt_rows ? prompt_scoring_span(scheduled) : std::pair<int64_t, int64_t>{0, 0};
    if (end > begin) {
      const size_t first_row = builder_.add_logit_rows(seq, begin - scheduled.start_position, end - begin);
      prompt_rows_.push_back({.seq_index = s, .first_position = begin, .first_row = first_row,
                              .num_rows = static_cast<size_t>(end - begin)});
    }
    const auto [pool_begin, pool_end] = with_prompt_rows ? pooled_span(scheduled) : std::pair<int64_t, int64_t>{0, 0};
    if (pool_end > pool_begin) {
      const size_t first_row = builder_.add_hidden_rows(seq, pool_begin - scheduled.start_position, pool_end - pool_begin);
      hidden_rows_.push_back({.seq_index = s, .first_position = pool_begin, .first_row = first_row,
                              .num_rows = static_cast<size_t>(pool_end - pool_begin)});
    }
    // The last row of a chunk that reaches the end of the sequence predicts its next
    // token; with drafts, the last token's row and each draft's row do, in order.
    const auto num_drafts = static_cast<int64_t>(scheduled.draft_tokens.size());
    if (scheduled.samples)
      sample_rows_.push_back(builder_.add_logit_rows(seq, scheduled.num_new_tokens - 1 - num_drafts, num_drafts + 1));
  }
  SLUICE_CHECK(sample_rows_.size() == static_cast<size_t>(step.num_sampling), "sampling rows disagree with the step");
  return builder_.batch();
}

std::span<const float> ModelRunner::run(const ScheduledStep& step) {
  const StepBatch batch = prepare(step, /*with_prompt_rows=*/true);
  logits_.resize(builder_.num_logit_rows() * static_cast<size_t>(vocab_size_));
  hidden_.resize(builder_.num_hidden_rows() * static_cast<size_t>(model_.hparams().embedding_length));
  model_.forward(batch, *cache_, logits_, hidden_);
  return logits_;
}

bool ModelRunner::samples_on_device() const {
  return model_.backend().supports_sampling() && model_.hparams().final_softcap <= 0.0f;
}

void ModelRunner::run_and_sample(const ScheduledStep& step, std::span<const backends::RowSampling> rows,
                                 std::span<backends::SampledToken> out) {
  SLUICE_CHECK(samples_on_device(), "run_and_sample: the backend does not sample");
  const StepBatch batch = prepare(step, /*with_prompt_rows=*/false);
  SLUICE_CHECK(rows.size() == builder_.num_logit_rows() && out.size() == rows.size(),
               "run_and_sample: one sampling row per sampling sequence");
  const backends::Tensor logits = model_.forward_on_device(batch, *cache_);
  if (!rows.empty()) model_.backend().sample(logits, rows, out);
  model_.backend().synchronize();
}

}  // namespace sluice::engine
