#include "engine/tts/model/tts_prompt.h"

#include <doctest/doctest.h>

#include "tts_test_util.h"

namespace sluice::engine::tts::unit_engine_tts_test_tts_prompt {
namespace {

using testing::kTtsBos;
using testing::kTtsEos;
using testing::kTtsPad;

struct World {
  testing::TempDir t;
  TtsConfig config;
  std::optional<tokenizer::Tokenizer> tok;
  explicit World(const std::string& kind = "custom_voice", const std::string& size = "0b6") {
    auto json = testing::tiny_config_json(false, kind, size);
    if (kind == "base") json["speaker_encoder_config"] = {{"enc_dim", 32}};  // the talker's width
    testing::write_tiny_folder(t.dir, json);
    config = read_tts_config(t.dir);
    tok = tokenizer::Tokenizer::from_hf_dir(t.dir);
  }
  TtsPrompt prompt(const PromptRequest& request) {
    auto built = build_prompt(config, *tok, request);
    REQUIRE(std::holds_alternative<TtsPrompt>(built));
    return std::get<TtsPrompt>(built);
  }
  PromptError error(const PromptRequest& request) {
    auto built = build_prompt(config, *tok, request);
    REQUIRE(std::holds_alternative<PromptError>(built));
    return std::get<PromptError>(built);
  }
  std::vector<PromptRow> role() const {
    return {{testing::kImStart, -1}, {tok->token_id("assistant"), -1}, {'\n', -1}};
  }
};

std::vector<PromptRow> concat(std::vector<PromptRow> a, const std::vector<PromptRow>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("tts prompt: CustomVoice, explicit language, non-streaming text (reference 1.4)") {
  World w;
  const TtsPrompt p = w.prompt({"hi", "ANNA", "English", "", true});
  // role | think, think_bos, lang, think_eos, speaker, pad under pad x5 + bos |
  // text + pad | eos + pad | pad + bos
  const std::vector<PromptRow> body = {{kTtsPad, 1104}, {kTtsPad, 1106}, {kTtsPad, 1050}, {kTtsPad, 1107},
                                       {kTtsPad, 1200}, {kTtsBos, 1100}, {'h', 1100},    {'i', 1100},
                                       {kTtsEos, 1100}, {kTtsPad, 1101}};
  CHECK(p.rows == concat(w.role(), body));
  CHECK(p.trailing_text.empty());
}

TEST_CASE("tts prompt: auto language, the dialect rule, streaming text") {
  World w;
  // auto without a dialect speaker: nothink prefix.
  TtsPrompt p = w.prompt({"hi", "anna", "auto", "", false});
  std::vector<PromptRow> body = {{kTtsPad, 1105}, {kTtsPad, 1106}, {kTtsPad, 1107},
                                 {kTtsPad, 1200}, {kTtsBos, 1100}, {'h', 1101}};
  CHECK(p.rows == concat(w.role(), body));
  CHECK(p.trailing_text == std::vector<int32_t>{'i', kTtsEos});
  // eric's dialect replaces auto and chinese (reference 8.4), not english.
  for (const char* language : {"auto", "chinese"}) {
    p = w.prompt({"hi", "Eric", language, "", true});
    CHECK(p.rows[3].codec == 1104);
    CHECK(p.rows[5].codec == 1062);
    CHECK(p.rows[7].codec == 1201);
  }
  p = w.prompt({"hi", "eric", "english", "", true});
  CHECK(p.rows[5].codec == 1050);
}

TEST_CASE("tts prompt: instructions lead as a text-only block on 1.7B, dropped on 0.6B") {
  World small;
  TtsPrompt p = small.prompt({"hi", "anna", "auto", "calm", true});
  CHECK(p.instructions_dropped);
  CHECK(p.rows.front().text == testing::kImStart);
  CHECK(p.rows[1].text == small.tok->token_id("assistant"));

  World design("voice_design", "1b7");
  p = design.prompt({"hi", "", "english", "calm", true});
  CHECK_FALSE(p.instructions_dropped);
  const std::vector<int32_t> instruct = design.tok->encode("<|im_start|>user\ncalm<|im_end|>\n", false, true);
  REQUIRE(p.rows.size() > instruct.size() + 3);
  for (size_t i = 0; i < instruct.size(); ++i) CHECK(p.rows[i] == PromptRow{instruct[i], -1});
  // No speaker row in VoiceDesign: think, think_bos, lang, think_eos, pad.
  CHECK(p.rows[instruct.size() + 3 + 4] == PromptRow{kTtsBos, 1100});
}

TEST_CASE("tts prompt: requests the checkpoint cannot serve name their field") {
  World w;
  CHECK(w.error({"hi", "nobody", "auto", "", true}).param == "voice");
  CHECK(w.error({"hi", "anna", "klingon", "", true}).param == "language");
  // Dialects are reached through speakers, never asked for directly (as the official wrapper).
  CHECK(w.error({"hi", "anna", "sichuan_dialect", "", true}).param == "language");
  CHECK(w.error({"", "anna", "auto", "", true}).param == "input");
  World design("voice_design", "1b7");
  CHECK(design.error({"hi", "anna", "auto", "", true}).param == "voice");
}

TEST_CASE("tts prompt: a Base voice clone's x-vector is the speaker row; its text streams by default") {
  World w("base");
  const std::vector<float> xvector(32, 0.5f);
  PromptRequest r{"hi", "", "english", "", std::nullopt, xvector};
  TtsPrompt p = w.prompt(r);
  // role | think, think_bos, lang, think_eos, x-vector, pad under pad x5 + bos | h + bos;
  // the rest of the text trails (generate_voice_clone's non_streaming_mode=False).
  const std::vector<PromptRow> body = {{kTtsPad, 1104}, {kTtsPad, 1106},    {kTtsPad, 1050}, {kTtsPad, 1107},
                                       {kTtsPad, -1, true}, {kTtsBos, 1100}, {'h', 1101}};
  CHECK(p.rows == concat(w.role(), body));
  CHECK(p.trailing_text == std::vector<int32_t>{'i', kTtsEos});
  CHECK(p.speaker_embedding == xvector);
  // Text in the prefill when asked for; auto language: the nothink prefix.
  r.non_streaming = true;
  r.language = "auto";
  p = w.prompt(r);
  CHECK(p.rows[3 + 3] == PromptRow{kTtsPad, -1, true});
  CHECK(p.rows.back() == PromptRow{kTtsPad, 1101});
  CHECK(p.trailing_text.empty());

  // Refused: no reference, one of another width, a preset voice name.
  CHECK(w.error({"hi", "", "auto", "", std::nullopt, {}}).param == "ref_audio");
  CHECK(w.error({"hi", "", "auto", "", std::nullopt, std::vector<float>(31, 0.0f)}).param == "ref_audio");
  CHECK(w.error({"hi", "ryan", "auto", "", std::nullopt, xvector}).param == "voice");
  // The other kinds take no reference.
  World custom;
  CHECK(custom.error({"hi", "anna", "auto", "", std::nullopt, xvector}).param == "ref_audio");
  // CustomVoice keeps its text in the prefill by default.
  CHECK(custom.prompt({"hi", "anna", "auto", ""}).trailing_text.empty());
}

TEST_CASE("tts prompt: ICL puts the reference transcript and frames after the prefix (reference 1.4 4c)") {
  World w("base");
  const std::vector<float> xvector(32, 0.5f);
  std::vector<int32_t> codes(16 * 2, 3);  // two reference frames
  PromptRequest r{"hi", "", "english", "", std::nullopt, xvector, codes, "ok"};
  TtsPrompt p = w.prompt(r);
  const size_t body = 3 + 6;  // role, then think, think_bos, lang, think_eos, x-vector, pad
  REQUIRE(p.rows.size() == body + 3);
  // Text track: "ok" "hi" tts_eos (5 ids) against codec bos + 2 frames (3 rows): the
  // last two trail.
  CHECK(p.rows[body] == PromptRow{'o', 1101});
  CHECK(p.rows[body + 1] == PromptRow{'k', -1, false, 0});
  CHECK(p.rows[body + 2] == PromptRow{'h', -1, false, 1});
  CHECK(p.trailing_text == std::vector<int32_t>{'i', kTtsEos});
  CHECK(p.ref_codes == codes);
  // More frames than text: tts_pad fills the text track, nothing trails.
  r.ref_codes.assign(16 * 6, 3);
  p = w.prompt(r);
  REQUIRE(p.rows.size() == body + 7);
  CHECK(p.rows[body + 4] == PromptRow{kTtsEos, -1, false, 3});
  CHECK(p.rows[body + 6] == PromptRow{kTtsPad, -1, false, 5});
  CHECK(p.trailing_text.empty());
  // Non-streaming: text rows with codec pad first, then the codec rows with tts_pad.
  r.non_streaming = true;
  r.ref_codes = codes;
  p = w.prompt(r);
  REQUIRE(p.rows.size() == body + 5 + 3);
  CHECK(p.rows[body + 4] == PromptRow{kTtsEos, 1100});
  CHECK(p.rows[body + 5] == PromptRow{kTtsPad, 1101});
  CHECK(p.rows[body + 7] == PromptRow{kTtsPad, -1, false, 1});
  CHECK(p.trailing_text.empty());

  // Refused: no transcript, partial frames, codes outside the codebooks.
  CHECK(w.error({"hi", "", "auto", "", std::nullopt, xvector, codes, ""}).param == "ref_text");
  CHECK(w.error({"hi", "", "auto", "", std::nullopt, xvector, std::vector<int32_t>(17, 1), "ok"}).param ==
        "ref_audio");
  CHECK(w.error({"hi", "", "auto", "", std::nullopt, xvector, std::vector<int32_t>(16, 256), "ok"}).param ==
        "ref_audio");
}

TEST_CASE("tts prompt: synthetic prompts have the real layout") {
  const TtsConfig c = tts_config_preset("0.6b", TtsKind::custom_voice);
  const TtsPrompt p = synthetic_prompt(c, 10);
  // role 3 + prefix (nothink, think_bos, think_eos, speaker, pad) 5 + text 10 + eos + bos rows.
  CHECK(p.rows.size() == 3 + 5 + 10 + 2);
  CHECK(p.rows.back() == PromptRow{c.text.tts_pad, c.codec.bos});
  for (const PromptRow& row : p.rows) CHECK(row.text < c.text_vocab_size);
}

}  // namespace sluice::engine::tts
