// TokenCountBound: never more than the tokens encode() returns (else a prompt that
// fits would be refused), and far tighter than bytes / longest piece on runs of one
// byte (else 500 KB of spaces passes the pre-check and costs seconds to tokenize).
#include "engine/tokenizer/token_count_bound.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/loader/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::tokenizer::unit_engine_tokenizer_test_token_count_bound {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(SLUICE_FIXTURES_DIR) / "tokenizer";
const fs::path kModels = fs::path(SLUICE_FIXTURES_DIR).parent_path().parent_path() / "models";

std::vector<std::string> hard_texts() {
  std::vector<std::string> texts = {
      "",
      "hello world",
      std::string(5000, ' '),
      std::string(3000, '\n'),
      std::string(2000, '\t'),
      "a" + std::string(4097, ' ') + "b",
      std::string(1000, ' ') + "x" + std::string(1000, '\n') + "y \t\r\n z" + std::string(777, ' '),
      " \t \n \r\n" + std::string(600, ' ') + "\v\f" + std::string(600, '\t'),
      std::string(3000, '=') + std::string(3000, 'a') + std::string(700, '-') + "<|im_end|>",
      "\xFF\xFE" + std::string(900, '\x80') + "\xE2\x96\x81\xE2\x96\x81",  // invalid UTF-8, "▁▁"
  };
  // Random mixes of words and whitespace runs of every length.
  std::mt19937 rng(7);
  const std::string spaces = " \t\n\r=a";
  for (int t = 0; t < 40; ++t) {
    std::string text;
    for (int piece = 0; piece < 30; ++piece) {
      if (rng() % 2) {
        text.append(rng() % 400, spaces[rng() % spaces.size()]);
      } else {
        for (unsigned i = rng() % 12; i > 0; --i) text += static_cast<char>('a' + rng() % 26);
      }
    }
    texts.push_back(text);
  }
  return texts;
}

void check_sound(const Tokenizer& tok) {
  const TokenCountBound bound(tok);
  for (const std::string& text : hard_texts()) {
    for (bool flags : {false, true}) {
      const auto tokens = static_cast<int64_t>(tok.encode(text, flags, flags).size());
      INFO("text of " << text.size() << " bytes, " << tokens << " tokens");
      CHECK(bound.min_tokens(text) <= tokens);
      CHECK(bound.min_tokens_of_bytes(text.size()) <= tokens);
    }
  }
}

TEST_CASE("the token-count bound is never above the real count") {
  for (const char* name : {"gpt2", "llama3", "qwen2", "gemma"}) {
    INFO(name);
    check_sound(Tokenizer::from_gguf(loader::GgufFile::open(kFixtures / (std::string(name) + ".gguf"))));
  }
  for (const char* model : {"SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"}) {
    const fs::path path = kModels / model;
    if (sluice::testing::has_model_file(path, "token-count bound on a real vocabulary")) {
      INFO(model);
      check_sound(Tokenizer::from_gguf(loader::GgufFile::open(path)));
    }
  }
}

TEST_CASE("a run of one byte counts by the longest token of that byte, not the longest token") {
  const fs::path path = kModels / "SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!sluice::testing::has_model_file(path, "whitespace bound on SmolLM2")) return;
  const Tokenizer tok = Tokenizer::from_gguf(loader::GgufFile::open(path));
  const TokenCountBound bound(tok);
  CHECK(bound.max_run_piece_bytes(' ') < bound.max_piece_bytes());
  // The attack of the issue: 530 KB of spaces passed bytes / (longest piece + 1)
  // against an 8192-token context.
  const std::string spaces(530'000, ' ');
  CHECK(bound.min_tokens_of_bytes(spaces.size()) < 8192);
  CHECK(bound.min_tokens(spaces) > 8192);
  CHECK(bound.min_tokens(spaces) <= static_cast<int64_t>(tok.encode(spaces, false, false).size()));
}

}  // namespace
}  // namespace sluice::tokenizer
