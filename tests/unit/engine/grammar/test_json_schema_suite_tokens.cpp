// The official JSON-Schema-Test-Suite (schema_suite.h) token by token, with the
// SmolLM2 (49k tokens, byte-level BPE) and Gemma 3 (262k, SentencePiece) tokenizers:
// for every schema the compiler accepts (strict), compiled once per tokenizer, every
// valid instance is encoded by the model's tokenizer and walked through the matcher:
// each token must be allowed by accept_token, and at the end the matcher is complete
// and its mask allows EOS; at every step the mask (fill_mask, what sampling uses) must
// allow the next token before accept_token takes it. A valid instance that the closed
// default refuses walks the open grammar (closed_objects false) instead
// (test_json_schema_suite.cpp counts those). Every step is checked: the whole
// test takes about 4 s in Release on a 2-core VM (Gemma about 3 s of it: a fresh mask
// walks a 262k-token trie), well under a minute under ASan. test_matcher_bench.cpp
// checks masks against brute force.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>

#include "engine/grammar/matcher.h"
#include "engine/grammar_tokens.h"
#include "engine/loader/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/engine/grammar/schema_suite.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::grammar::unit_engine_grammar_test_json_schema_suite_tokens {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(SLUICE_FIXTURES_DIR) / "../../models";

bool allows(const std::vector<uint64_t>& mask, int32_t id) {
  return (mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1;
}

void run_tokenizer(const std::string& name, const fs::path& path) {
  if (!sluice::testing::has_model_file(path, "json schema suite token by token on " + name)) return;
  const auto& suite = testing::schema_suite();
  if (suite.empty()) {
    MESSAGE("json-schema-test-suite is not installed (scripts/install-deps.sh installs it): skipped");
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(loader::GgufFile::open(path));
  const auto table = engine::make_token_table(tok, tok.vocab_size());
  REQUIRE_FALSE(table->eos_ids().empty());
  const int32_t eos = table->eos_ids().front();
  std::vector<uint64_t> mask(Matcher::mask_words(table->vocab_size()));
  int schemas = 0, instances = 0, accepted = 0, tokens = 0;
  for (const testing::SuiteCase& c : suite) {
    if (!c.grammar) continue;
    ++schemas;
    const auto compiled = CompiledGrammar::compile(*c.grammar, table);
    std::shared_ptr<CompiledGrammar> open;
    for (const testing::SuiteInstance& instance : c.instances) {
      if (!instance.valid) continue;
      Matcher probe(compiled);
      const bool closed_refuses = !(probe.accept_bytes(instance.text) && probe.is_complete());
      if (closed_refuses && !open && c.open_grammar) open = CompiledGrammar::compile(*c.open_grammar, table);
      ++instances;
      INFO(name, " | ", c.where, " | ", instance.description, " | ", instance.text);
      const std::vector<int32_t> ids = tok.encode(instance.text, /*add_special=*/false, /*parse_special=*/false);
      REQUIRE(tok.decode(ids, false) == instance.text);
      Matcher m(closed_refuses && open ? open : compiled);
      bool ok = true;
      for (size_t i = 0; i < ids.size() && ok; ++i) {
        INFO("token ", i, " (id ", ids[i], ", ", table->bytes(ids[i]), ")");
        m.fill_mask(mask);
        ok = allows(mask, ids[i]);
        CHECK(ok);
        if (!ok) break;
        ok = m.accept_token(ids[i]);
        CHECK(ok);
      }
      tokens += static_cast<int>(ids.size());
      if (!ok) continue;
      const bool complete = m.is_complete();
      CHECK(complete);
      m.fill_mask(mask);
      const bool eos_allowed = allows(mask, eos) && m.accept_token(eos);
      CHECK(eos_allowed);
      accepted += complete && eos_allowed;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE(name << ": " << schemas << " schemas compiled, " << accepted << "/" << instances
               << " valid instances accepted token by token (" << tokens << " tokens, a mask checked before each), "
               << seconds << " s");
  CHECK(accepted == instances);
}

}  // namespace

TEST_CASE("json schema: the official test suite, token by token (SmolLM2, Gemma 3)") {
  run_tokenizer("SmolLM2", kModels / "SmolLM2-135M-Instruct.Q4_1.gguf");
  run_tokenizer("Gemma 3", kModels / "gemma-3-270m-q4_k_m.gguf");
}

}  // namespace sluice::grammar
