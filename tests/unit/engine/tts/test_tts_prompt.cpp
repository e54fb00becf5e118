#include "engine/tts/model/tts_prompt.h"

#include <doctest/doctest.h>

#include "tts_test_util.h"

namespace sluice::engine::tts {
namespace {

using testing::kTtsBos;
using testing::kTtsEos;
using testing::kTtsPad;

struct World {
  testing::TempDir t;
  TtsConfig config;
  std::optional<tokenizer::Tokenizer> tok;
  explicit World(const std::string& kind = "custom_voice", const std::string& size = "0b6") {
    testing::write_tiny_folder(t.dir, testing::tiny_config_json(false, kind, size));
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

TEST_CASE("tts prompt: synthetic prompts have the real layout") {
  const TtsConfig c = tts_config_preset("0.6b", TtsKind::custom_voice);
  const TtsPrompt p = synthetic_prompt(c, 10);
  // role 3 + prefix (nothink, think_bos, think_eos, speaker, pad) 5 + text 10 + eos + bos rows.
  CHECK(p.rows.size() == 3 + 5 + 10 + 2);
  CHECK(p.rows.back() == PromptRow{c.text.tts_pad, c.codec.bos});
  for (const PromptRow& row : p.rows) CHECK(row.text < c.text_vocab_size);
}

}  // namespace sluice::engine::tts
