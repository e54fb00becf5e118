#include "engine/tokenizer/hf_vocab_merges.h"

#include <doctest/doctest.h>

#include <string>

#include "engine/loader/load_error.h"
#include "engine/tokenizer/tokenizer.h"
#include "../tts/tts_test_util.h"

namespace sluice::tokenizer::unit_engine_tokenizer_test_vocab_merges {

using engine::tts::testing::TempDir;

TEST_CASE("tokenizer: a vocab.json + merges.txt folder (Qwen3-TTS layout) loads through from_hf_dir") {
  TempDir t;
  engine::tts::testing::write_tokenizer(t.dir);
  const Tokenizer tok = Tokenizer::from_hf_dir(t.dir);
  CHECK(tok.kind() == ModelKind::ByteLevelBpe);
  const int32_t assistant = tok.token_id("assistant");
  REQUIRE(assistant >= 256);
  // Specials from added_tokens_decoder are matched whole; merges build words; the
  // Qwen2 split keeps "\n" apart; bytes map through the GPT-2 alphabet.
  const std::vector<int32_t> expected = {engine::tts::testing::kImStart, assistant, 10, 'h', 'i',
                                         engine::tts::testing::kImEnd};
  CHECK(tok.encode("<|im_start|>assistant\nhi<|im_end|>", false, true) == expected);
  CHECK(tok.encode(" user", false, true) == std::vector<int32_t>{' ', tok.token_id("user")});
  CHECK(tok.encode("users", false, true) == std::vector<int32_t>{tok.token_id("user"), 's'});
  CHECK(tok.encode("user", false, true) == std::vector<int32_t>{tok.token_id("user")});
  CHECK(tok.eos_id() == engine::tts::testing::kImEnd);
  CHECK(tok.pad_id() == engine::tts::testing::kEndOfText);
  CHECK(tok.is_special(engine::tts::testing::kTtsPad));
  CHECK(tok.decode(tok.encode("héllo wörld", false, true), false) == "héllo wörld");
}

TEST_CASE("tokenizer: vocab.json + merges.txt errors name the file") {
  TempDir t;
  engine::tts::testing::write_tokenizer(t.dir);
  engine::tts::testing::write_file(t.dir / "merges.txt", "#version: 0.2\na zz\n");
  try {
    (void)vocab_from_vocab_merges(t.dir);
    FAIL("expected a LoadError");
  } catch (const loader::LoadError& e) {
    CHECK(std::string(e.what()).find("merges.txt") != std::string::npos);
    CHECK(std::string(e.what()).find("zz") != std::string::npos);
  }
  engine::tts::testing::write_tokenizer(t.dir);
  engine::tts::testing::write_file(t.dir / "tokenizer_config.json",
                                   R"({"added_tokens_decoder": {"99999999": {"content": "<x>"}}})");
  try {
    (void)vocab_from_vocab_merges(t.dir);
    FAIL("expected a LoadError");
  } catch (const loader::LoadError& e) {
    CHECK(std::string(e.what()).find("tokenizer_config.json") != std::string::npos);
  }
}

}  // namespace sluice::tokenizer
