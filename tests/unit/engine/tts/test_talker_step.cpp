#include "engine/tts/model/talker_step.h"

#include <doctest/doctest.h>

#include <vector>

// The one builder of the talker's step input (the generator and the speech engine
// both use it): prompt rows, feedback rows from kept frames, KV slots, and the
// order of the codec entries the talker relies on.
namespace sluice::engine::tts::unit_engine_tts_test_talker_step {
namespace {

TtsConfig small_config() {
  TtsConfig config;
  config.num_code_groups = 3;
  config.text.tts_pad = 99;
  return config;
}

TEST_CASE("talker step: prompt rows, feedback rows from kept frames, slots by block table") {
  const TtsConfig config = small_config();
  TtsPrompt a;  // three prompt rows: text only, both tracks, codec only
  a.rows = {{.text = 10, .codec = -1}, {.text = 11, .codec = 20}, {.text = -1, .codec = 21}};
  TtsPrompt b;
  b.rows = {{.text = 12, .codec = 22}};
  b.trailing_text = {50};  // frame 0 feeds text 50; frame 1 gets tts_pad
  const std::vector<int32_t> b_frames = {1, 2, 3, 4, 5, 6};  // two frames of G = 3

  TalkerStep step;
  step.positions = {7};  // the builder starts from a clear step
  TalkerStepBuilder builder(config, /*block_size=*/2, step);
  builder.add(a, {}, 0, 3, std::vector<int32_t>{5, 8});
  // b after a preemption: its prompt row is cached, frames 0 and 1 are recomputed.
  builder.add(b, b_frames, 1, 2, std::vector<int32_t>{3, 4});
  builder.finish();

  CHECK(step.positions == std::vector<int32_t>{0, 1, 2, 1, 2});
  // Slot = block_table[p / 2] * 2 + p % 2.
  CHECK(step.kv_slots == std::vector<int32_t>{10, 11, 16, 7, 8});
  CHECK(step.text_ids == std::vector<int32_t>{10, 11, 50, 99});
  CHECK(step.text_of_row == std::vector<int32_t>{0, 1, -1, 2, 3});
  // The prompt's codec ids first, then the feedback rows' codebook 0 (they go last).
  CHECK(step.codec_ids == std::vector<int32_t>{20, 21, 1, 4});
  CHECK(step.codec_of_row == std::vector<int32_t>{-1, 0, 1, 2, 3});
  CHECK(step.num_feedback == 2);
  // Codebook j of feedback entry i at (j - 1) * num_feedback + i.
  CHECK(step.feedback_codes == std::vector<int32_t>{2, 5, 3, 6});
  REQUIRE(step.sequences.size() == 2);
  CHECK(step.sequences[0].query_begin == 0);
  CHECK(step.sequences[0].num_cached == 0);
  CHECK(step.sequences[0].num_queries == 3);
  CHECK(step.sequences[1].query_begin == 3);
  CHECK(step.sequences[1].num_cached == 1);
  CHECK(step.sequences[1].num_queries == 2);
  CHECK(step.sequences[1].block_table == std::vector<int32_t>{3, 4});
  CHECK(step.logit_rows == std::vector<int32_t>{2, 4});
}

TEST_CASE("talker step: a running sequence feeds back its last frame only") {
  const TtsConfig config = small_config();
  TtsPrompt p;
  p.rows = {{.text = 1, .codec = 2}, {.text = 3, .codec = 4}};
  const std::vector<int32_t> frames = {7, 8, 9, 17, 18, 19, 27, 28, 29};
  TalkerStep step;
  TalkerStepBuilder builder(config, 16, step);
  builder.add(p, frames, /*start=*/4, /*count=*/1, std::vector<int32_t>{0});  // row 4 = frame 2
  builder.finish();
  CHECK(step.codec_ids == std::vector<int32_t>{27});
  CHECK(step.feedback_codes == std::vector<int32_t>{28, 29});
  CHECK(step.text_ids == std::vector<int32_t>{99});
  CHECK(step.kv_slots == std::vector<int32_t>{4});
}

}  // namespace
TEST_CASE("talker step: a Base prompt's speaker row takes its x-vector, after every codec id") {
  TtsConfig config = small_config();
  config.talker.embedding_length = 2;
  TtsPrompt a;  // codec, x-vector, codec
  a.rows = {{.text = 1, .codec = 20}, {.text = 2, .codec = -1, .speaker = true}, {.text = 3, .codec = 21}};
  a.speaker_embedding = {0.5f, -0.25f};
  TtsPrompt b;
  b.rows = {{.text = 4, .codec = -1, .speaker = true}};
  b.speaker_embedding = {2.0f, 3.0f};
  const std::vector<int32_t> b_frames = {1, 2, 3};
  TalkerStep step;
  TalkerStepBuilder builder(config, 16, step);
  builder.add(a, {}, 0, 3, std::vector<int32_t>{0});
  builder.add(b, b_frames, 0, 2, std::vector<int32_t>{1});  // its prompt row and frame 0's feedback
  builder.finish();
  // Codec parts: the prompt ids, the feedback's codebook 0, then the two x-vectors.
  CHECK(step.codec_ids == std::vector<int32_t>{20, 21, 1});
  CHECK(step.codec_of_row == std::vector<int32_t>{0, 3, 1, 4, 2});
  CHECK(step.speaker_vectors == std::vector<float>{0.5f, -0.25f, 2.0f, 3.0f});
  CHECK(step.num_feedback == 1);
}

TEST_CASE("talker step: ICL reference-frame rows are summed like fed-back frames, from the prompt's codes") {
  const TtsConfig config = small_config();
  TtsPrompt p;
  p.rows = {{.text = 1, .codec = 5}, {.text = 2, .codec = -1, .ref_frame = 1}, {.text = 3, .codec = -1, .ref_frame = 0}};
  p.ref_codes = {10, 11, 12, 20, 21, 22};  // two frames of G = 3
  p.trailing_text = {40};
  const std::vector<int32_t> frames = {7, 8, 9};
  TalkerStep step;
  TalkerStepBuilder builder(config, 16, step);
  builder.add(p, frames, 0, 4, std::vector<int32_t>{0});  // three prompt rows and frame 0's feedback
  builder.finish();
  CHECK(step.codec_ids == std::vector<int32_t>{5, 20, 10, 7});
  CHECK(step.codec_of_row == std::vector<int32_t>{0, 1, 2, 3});
  CHECK(step.num_feedback == 3);
  CHECK(step.feedback_codes == std::vector<int32_t>{21, 11, 8, 22, 12, 9});
  CHECK(step.text_ids == std::vector<int32_t>{1, 2, 3, 40});
}

}  // namespace sluice::engine::tts
