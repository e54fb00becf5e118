#include "engine/tts/model/talker_step.h"

#include "backends/check.h"
#include "engine/models/batch_builder.h"

namespace sluice::engine::tts {

void TalkerStep::clear() {
  text_ids.clear();
  text_of_row.clear();
  codec_ids.clear();
  codec_of_row.clear();
  num_feedback = 0;
  feedback_codes.clear();
  speaker_vectors.clear();
  positions.clear();
  kv_slots.clear();
  sequences.clear();
  logit_rows.clear();
}

TalkerStepBuilder::TalkerStepBuilder(const TtsConfig& config, int32_t block_size, TalkerStep& step)
    : config_(config), block_size_(block_size), step_(step) {
  step_.clear();
}

void TalkerStepBuilder::add(const TtsPrompt& prompt, std::span<const int32_t> frames, int64_t start, int64_t count,
                            std::span<const int32_t> block_table) {
  SLUICE_CHECK(count > 0, "TalkerStepBuilder::add: no rows");
  const auto groups = static_cast<size_t>(config_.num_code_groups);
  const auto num_rows = static_cast<int64_t>(prompt.rows.size());
  backends::SequenceSlice slice;
  slice.query_begin = static_cast<int32_t>(step_.positions.size());
  slice.num_cached = static_cast<int32_t>(start);
  slice.num_queries = static_cast<int32_t>(count);
  slice.block_table.assign(block_table.begin(), block_table.end());
  for (int64_t p = start; p < start + count; ++p) {
    const auto row = static_cast<int32_t>(step_.positions.size());
    if (p < num_rows) {
      const PromptRow& pr = prompt.rows[static_cast<size_t>(p)];
      step_.text_of_row.push_back(pr.text < 0 ? -1 : static_cast<int32_t>(step_.text_ids.size()));
      if (pr.text >= 0) step_.text_ids.push_back(pr.text);
      step_.codec_of_row.push_back(pr.codec < 0 ? -1 : static_cast<int32_t>(step_.codec_ids.size()));
      if (pr.codec >= 0) step_.codec_ids.push_back(pr.codec);
      if (pr.ref_frame >= 0) {
        // An ICL reference frame: summed like a fed-back frame (its entry goes last).
        const auto f = static_cast<size_t>(pr.ref_frame);
        SLUICE_CHECK(pr.codec < 0 && (f + 1) * groups <= prompt.ref_codes.size(),
                     "TalkerStepBuilder::add: a reference-frame row past the prompt's reference codes");
        feedback_.push_back({row, std::span<const int32_t>(prompt.ref_codes).subspan(f * groups, groups)});
      }
      if (pr.speaker) {
        SLUICE_CHECK(pr.codec < 0 && static_cast<int64_t>(prompt.speaker_embedding.size()) ==
                                         config_.talker.embedding_length,
                     "TalkerStepBuilder::add: a speaker row without a speaker embedding of the talker's width");
        speakers_.push_back({row, prompt.speaker_embedding});  // its codec part is set by finish()
      }
    } else {
      const auto k = static_cast<size_t>(p - num_rows);
      SLUICE_CHECK((k + 1) * groups <= frames.size(), "TalkerStepBuilder::add: a fed-back frame is missing");
      const int32_t text = k < prompt.trailing_text.size() ? prompt.trailing_text[k] : config_.text.tts_pad;
      step_.text_of_row.push_back(static_cast<int32_t>(step_.text_ids.size()));
      step_.text_ids.push_back(text);
      step_.codec_of_row.push_back(-1);  // set by finish(): feedback entries go last
      feedback_.push_back({row, frames.subspan(k * groups, groups)});
    }
    const auto pos = static_cast<int32_t>(p);
    step_.positions.push_back(pos);
    step_.kv_slots.push_back(static_cast<int32_t>(kv_slot(block_table, p, block_size_)));
  }
  step_.logit_rows.push_back(slice.query_begin + slice.num_queries - 1);
  step_.sequences.push_back(std::move(slice));
}

void TalkerStepBuilder::finish() {
  const auto f = static_cast<int32_t>(feedback_.size());
  step_.num_feedback = f;
  for (const Feedback& fb : feedback_) {
    step_.codec_of_row[static_cast<size_t>(fb.row)] = static_cast<int32_t>(step_.codec_ids.size());
    step_.codec_ids.push_back(fb.codes[0]);
  }
  const int32_t groups = config_.num_code_groups;
  step_.feedback_codes.resize(static_cast<size_t>(f) * static_cast<size_t>(groups - 1));
  for (int32_t j = 1; j < groups; ++j)
    for (int32_t i = 0; i < f; ++i)
      step_.feedback_codes[static_cast<size_t>((j - 1) * f + i)] =
          feedback_[static_cast<size_t>(i)].codes[static_cast<size_t>(j)];
  feedback_.clear();
  // Speaker vectors follow every codec id.
  const auto n_codec = static_cast<int32_t>(step_.codec_ids.size());
  for (size_t i = 0; i < speakers_.size(); ++i) {
    step_.codec_of_row[static_cast<size_t>(speakers_[i].row)] = n_codec + static_cast<int32_t>(i);
    step_.speaker_vectors.insert(step_.speaker_vectors.end(), speakers_[i].vector.begin(), speakers_[i].vector.end());
  }
  speakers_.clear();
}

}  // namespace sluice::engine::tts
