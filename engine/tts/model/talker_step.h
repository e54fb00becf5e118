#pragma once
// The talker's input for one step of many speech sequences, and the one builder of
// it that the generator (`sluice speak`, benchmarks) and the speech engine share.
//
// A sequence's rows: row p < its prompt rows is prompt row p; row p >= prompt rows is
// the feedback of frame k = p - prompt rows: P(trailing_text[k], or tts_pad past its
// end) + C(codebook 0 of frame k) + the code predictor's embeddings of its codebooks
// 1..G-1 (Qwen3TTSTalkerForConditionalGeneration.forward). An ICL prompt's
// reference-frame rows are summed the same way, from the prompt's reference codes. So
// a sequence that is preempted recomputes its rows from the frames it keeps, and one
// that runs on feeds back its last frame.
#include <cstdint>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "engine/tts/model/tts_config.h"
#include "engine/tts/model/tts_prompt.h"

namespace sluice::engine::tts {

// One step on the host. T rows; each sequence's rows are contiguous and described
// by its SequenceSlice. A row adds P(text_ids[text_of_row[r]]) when that index is
// >= 0 and, when codec_of_row[r] >= 0, entry codec_of_row[r] of the codec parts:
// the embeddings of codec_ids, then the speaker_vectors as they are. The last
// num_feedback entries of codec_ids are feedback rows: they also add the code
// predictor's embeddings of codebooks 1..G-1, feedback_codes[(j - 1) *
// num_feedback + i] for codebook j of feedback entry i.
struct TalkerStep {
  std::vector<int32_t> text_ids;
  std::vector<int32_t> text_of_row;   // [T]
  std::vector<int32_t> codec_ids;
  std::vector<int32_t> codec_of_row;  // [T]
  int32_t num_feedback = 0;
  std::vector<int32_t> feedback_codes;  // [(G - 1) * num_feedback]
  std::vector<float> speaker_vectors;   // [S, d]: Base prompts' x-vectors (codec parts n_codec .. n_codec + S - 1)
  std::vector<int32_t> positions;       // [T]
  std::vector<int32_t> kv_slots;        // [T]
  std::vector<backends::SequenceSlice> sequences;
  std::vector<int32_t> logit_rows;      // [R] the last row of each sequence, in sequence order

  void clear();
};

// Fills a TalkerStep sequence by sequence; finish() before the talker runs it.
class TalkerStepBuilder {
 public:
  // Clears `step`. block_size: the KV cache's, for the rows' slots.
  TalkerStepBuilder(const TtsConfig& config, int32_t block_size, TalkerStep& step);

  // Rows [start, start + count) of one sequence, at the KV slots of its
  // block_table; its logit row is the last of them. frames: the codes it generated,
  // G per frame, at least up to the last frame these rows feed back.
  void add(const TtsPrompt& prompt, std::span<const int32_t> frames, int64_t start, int64_t count,
           std::span<const int32_t> block_table);

  // Appends the feedback rows' codec entries (they go last in codec_ids) and the
  // speaker rows' vectors.
  void finish();

 private:
  struct Feedback {
    int32_t row;
    std::span<const int32_t> codes;  // [G]
  };
  struct SpeakerRow {
    int32_t row;
    std::span<const float> vector;  // [d]
  };

  const TtsConfig& config_;
  const int32_t block_size_;
  TalkerStep& step_;
  std::vector<Feedback> feedback_;
  std::vector<SpeakerRow> speakers_;
};

}  // namespace sluice::engine::tts
