// Tokenizer behaviour beyond corpus parity: BOS/EOS, special-token parsing, end-of-
// generation ids, streaming detokenization, load errors.
#include "engine/tokenizer/tokenizer.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/loader/gguf_file.h"
#include "engine/loader/load_error.h"
#include "engine/tokenizer/detokenizer.h"
#include "engine/tokenizer/utf8.h"
#include "tests/unit/engine/loader/gguf_builder.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::tokenizer::unit_engine_tokenizer_test_tokenizer {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(SLUICE_FIXTURES_DIR) / "tokenizer";
const fs::path kModels = fs::path(SLUICE_FIXTURES_DIR).parent_path().parent_path() / "models";

Tokenizer fixture(const std::string& name) {
  return Tokenizer::from_gguf(loader::GgufFile::open(kFixtures / (name + ".gguf")));
}

TEST_CASE("utf8 helpers") {
  CHECK(utf8::is_valid("héllo 😀"));
  CHECK_FALSE(utf8::is_valid("\xC3"));
  CHECK_FALSE(utf8::is_valid("\xED\xA0\x80"));  // a surrogate
  CHECK(utf8::incomplete_tail("ab\xF0\x9F") == 2);
  CHECK(utf8::incomplete_tail("ab\xF0\x9F\x98\x80") == 0);
  CHECK(utf8::incomplete_tail("ab\x80") == 0);
  CHECK(utf8::sanitize("a\xFF" "b") == "a\xEF\xBF\xBD" "b");
  CHECK(utf8::byte_to_unicode()[' '] == "Ġ");
  CHECK(utf8::unicode_to_byte(0x120) == ' ');
}

TEST_CASE("special tokens are parsed only when asked, and never split") {
  const Tokenizer tok = fixture("llama3");
  const int32_t im_start = tok.token_id("<|im_start|>");
  const int32_t think = tok.token_id("<think>");
  REQUIRE(im_start >= 0);
  REQUIRE(think >= 0);
  const auto parsed = tok.encode("<|im_start|>user", false, true);
  CHECK(parsed.front() == im_start);
  const auto raw = tok.encode("<|im_start|>user", false, false);
  CHECK(raw.front() != im_start);
  CHECK(tok.decode(raw, false) == "<|im_start|>user");
  // User-defined tokens match whole either way.
  CHECK(tok.encode("a<think>b", false, false)[1] == think);
  CHECK(tok.is_special(im_start));
  CHECK_FALSE(tok.is_special(think));
  CHECK(tok.decode(parsed, /*skip_special=*/true) == "user");
}

TEST_CASE("BOS follows the model's add_bos flag") {
  const Tokenizer gemma = fixture("gemma");
  REQUIRE(gemma.add_bos());
  const auto with = gemma.encode("hello", true, true);
  REQUIRE(!with.empty());
  CHECK(with.front() == gemma.bos_id());
  CHECK(gemma.encode("hello", false, true).front() != gemma.bos_id());
  CHECK(gemma.decode(with, true) == "hello");

  const Tokenizer llama3 = fixture("llama3");
  REQUIRE_FALSE(llama3.add_bos());
  CHECK(llama3.encode("hello", true, true) == llama3.encode("hello", false, true));
  CHECK(llama3.encode("", true, true).empty());
}

TEST_CASE("end-of-generation ids include end-of-turn tokens") {
  const Tokenizer tok = fixture("llama3");
  CHECK(tok.is_eos(tok.token_id("<|im_end|>")));
  CHECK(tok.is_eos(tok.token_id("<|endoftext|>")));
  CHECK(tok.chat_template().find("im_start") != std::string::npos);

  const fs::path smol = kModels / "SmolLM2-135M-Instruct.Q4_1.gguf";
  if (sluice::testing::has_model_file(smol, "end-of-generation ids of SmolLM2")) {
    const Tokenizer s = Tokenizer::from_gguf(loader::GgufFile::open(smol));
    CHECK(s.vocab_size() == 49152);
    CHECK(s.eos_id() == 2);
    CHECK(s.is_eos(0));  // <|endoftext|>
    CHECK(s.is_eos(2));  // <|im_end|>
    CHECK_FALSE(s.add_bos());
  }
  const fs::path g3 = kModels / "gemma-3-270m-q4_k_m.gguf";
  if (sluice::testing::has_model_file(g3, "end-of-generation ids of Gemma 3")) {
    const Tokenizer g = Tokenizer::from_gguf(loader::GgufFile::open(g3));
    CHECK(g.bos_id() == 2);
    CHECK(g.add_bos());
    CHECK(g.is_eos(1));
    CHECK(g.is_eos(g.token_id("<end_of_turn>")));
    CHECK(g.encode("Hi", true, true).front() == 2);
  }
}

TEST_CASE("incremental detokenizer holds back partial characters") {
  const Tokenizer gemma = fixture("gemma");
  // "𐍈" is not in the tiny vocabulary: four <0xF0>.. byte-fallback tokens.
  const auto ids = gemma.encode("a𐍈", false, true);
  REQUIRE(ids.size() >= 5);
  IncrementalDetokenizer detok(gemma);
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string part = detok.push(ids[i]);
    CHECK(utf8::is_valid(part));
    out += part;
    if (i > 0 && i + 1 < ids.size()) CHECK(out == "a");  // the emoji is not complete yet
  }
  CHECK(out == "a𐍈");
  CHECK(detok.flush().empty());

  // A sequence cut short comes out as U+FFFD, never as a broken byte.
  IncrementalDetokenizer cut(gemma);
  CHECK(cut.push(ids[1]).empty());
  CHECK(cut.num_pending() == 1);
  CHECK(cut.flush() == "\xEF\xBF\xBD");
}

TEST_CASE("encode never throws on invalid UTF-8 and keeps every byte") {
  const Tokenizer tok = fixture("gpt2");
  const std::string bad = "ok\xFF\xC3(x\xE2\x82";
  CHECK(tok.decode(tok.encode(bad, false, true), false) == bad);
  const Tokenizer gemma = fixture("gemma");
  CHECK(gemma.decode(gemma.encode(bad, false, true), false) == bad);
}

TEST_CASE("load errors name the file and the key") {
  using loader::testing::GgufBuilder;
  using loader::testing::TempFile;
  auto open_and_load = [](GgufBuilder& builder) {
    TempFile file(builder.build());
    const auto gguf = loader::GgufFile::open(file.path());
    return Tokenizer::from_gguf(gguf);
  };
  {
    GgufBuilder b;
    b.string("tokenizer.ggml.model", "gpt2");
    CHECK_THROWS_WITH_AS(open_and_load(b), doctest::Contains("tokenizer.ggml.tokens"),
                         loader::LoadError);
  }
  {
    GgufBuilder b;
    b.string("tokenizer.ggml.model", "gpt2");
    b.string("tokenizer.ggml.pre", "gpt2");
    b.string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
    b.string_array("tokenizer.ggml.merges", {"a b", "a zz"});
    CHECK_THROWS_WITH_AS(open_and_load(b), doctest::Contains("tokenizer.ggml.merges[1]"),
                         loader::LoadError);
  }
  {
    GgufBuilder b;
    b.string("tokenizer.ggml.model", "gpt2");
    b.string("tokenizer.ggml.pre", "no-such-pre");
    b.string_array("tokenizer.ggml.tokens", {"a"});
    b.string_array("tokenizer.ggml.merges", std::vector<std::string>{});
    CHECK_THROWS_WITH_AS(open_and_load(b), doctest::Contains("tokenizer.ggml.pre"),
                         loader::LoadError);
  }
  CHECK_THROWS_AS(Tokenizer::from_hf_dir(kFixtures / "no-such-dir"), loader::LoadError);
}

TEST_CASE("tokenizer.json ids beyond the tokens listed are refused, not allocated") {
  // Seen while writing tests/fuzz/fuzz_tokenizer_json: an id of 2^31 made the reader
  // size its token table to 2^31 strings (64 GiB) before anything else was checked,
  // and a negative added-token id crashed it.
  auto load = [](const std::string& json) {
    loader::testing::Bytes bytes(json.size());
    std::memcpy(bytes.data(), json.data(), json.size());
    loader::testing::TempFile file(bytes, "tokenizer.json");
    return Tokenizer::from_hf_dir(file.path().parent_path());
  };
  const std::string ok = R"({"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},
                             "added_tokens":[{"id":3,"content":"<s>","special":true}]})";
  CHECK(load(ok).vocab_size() == 4);
  CHECK_THROWS_WITH_AS(load(R"({"model":{"type":"BPE","vocab":{"a":0,"b":2147483647}}})"),
                       doctest::Contains("model.vocab['b']: id 2147483647 is outside the 2 tokens listed"),
                       loader::LoadError);
  CHECK_THROWS_WITH_AS(load(R"({"model":{"type":"BPE","vocab":{"a":0}},"added_tokens":[{"id":4000000000,"content":"x"}]})"),
                       doctest::Contains("added_tokens: id 4000000000"), loader::LoadError);
  CHECK_THROWS_WITH_AS(load(R"({"model":{"type":"BPE","vocab":{"a":0}},"added_tokens":[{"id":-1,"content":"x"}]})"),
                       doctest::Contains("added_tokens: id -1"), loader::LoadError);
  CHECK_THROWS_AS(load(R"({"model":{"type":"BPE","vocab":{"a":"zero"}}})"), loader::LoadError);
}

TEST_CASE("a byte token that is not <0xHH> decodes as its text") {
  // Found by tests/fuzz/fuzz_tokenizer_json: "<0x<s>" passed for a byte token and
  // std::stoi's exception escaped the load.
  const std::string json =
      R"({"model":{"type":"BPE","byte_fallback":true,"vocab":{"<0x0A>":0,"<0x<s>":1,"a":2},"merges":[]}})";
  loader::testing::Bytes bytes(json.size());
  std::memcpy(bytes.data(), json.data(), json.size());
  loader::testing::TempFile file(bytes, "tokenizer.json");
  const Tokenizer tokenizer = Tokenizer::from_hf_dir(file.path().parent_path());
  CHECK(tokenizer.token_to_piece(0) == "\n");
  CHECK(tokenizer.token_to_piece(1) == "<0x<s>");
}

TEST_CASE("a megabyte of mixed text encodes in one pass to the ids of its parts and decodes back (speed printed)") {
  const fs::path smol = kModels / "SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!sluice::testing::has_model_file(smol, "encode a megabyte")) return;
  const Tokenizer tok = Tokenizer::from_gguf(loader::GgufFile::open(smol));
  // English, digits, punctuation, code, CJK and an emoji; the piece ends in a newline,
  // so the pre-tokenizer splits the long text where one piece ends and the next begins.
  const std::string piece =
      "The quick brown fox jumps over the lazy dog in 2024; it's 3.14159 times faster! "
      "def f(x):\n    return x * 2  # 日本語 😀\n";
  const std::vector<int32_t> piece_ids = tok.encode(piece, false, true);
  REQUIRE(!piece_ids.empty());
  CHECK(tok.decode(piece_ids, false) == piece);
  std::string text;
  size_t num_pieces = 0;
  for (; text.size() < 1'000'000; ++num_pieces) text += piece;
  const auto start = std::chrono::steady_clock::now();
  const auto ids = tok.encode(text, false, true);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("SmolLM2 encode: ", ids.size(), " tokens from ", text.size(), " bytes in ", seconds,
          " s = ", static_cast<double>(ids.size()) / seconds, " tokens/s");
  // The long text is the piece's ids over and over: nothing merged across a piece's
  // end, nothing lost or added deep into a long input.
  REQUIRE(ids.size() == num_pieces * piece_ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != piece_ids[i % piece_ids.size()]) {
      FAIL_CHECK("token ", i, " is ", ids[i], ", the piece's token ", i % piece_ids.size(), " is ",
                 piece_ids[i % piece_ids.size()]);
      break;
    }
  }
  CHECK(tok.decode(ids, false) == text);
}

}  // namespace
}  // namespace sluice::tokenizer
