// Schema compile time over the structured-output corpus (the 30 schemas the e2e test
// samples), printed, not asserted: the JSON Schema front end, the matcher's
// compilation and the first token mask on SmolLM2's vocabulary (the matcher builds
// its automaton lazily, so the first mask is part of what a first request waits for).
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/grammar/json_schema.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar_tokens.h"
#include "engine/loader/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::grammar::unit_engine_grammar_test_compile_time {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())));
  return values[index];
}

TEST_CASE("grammar: schema compile time over the e2e corpus (printed, not asserted)") {
  const fs::path models = fs::path(SLUICE_FIXTURES_DIR).parent_path().parent_path() / "models";
  const fs::path model = models / "SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!sluice::testing::has_model_file(model, "schema compile time")) return;
  const auto tokenizer = tokenizer::Tokenizer::from_gguf(loader::GgufFile::open(model));
  const auto tokens = engine::make_token_table(tokenizer, tokenizer.vocab_size());

  std::ifstream in(std::string(SLUICE_FIXTURES_DIR) + "/grammar/structured_corpus.json");
  REQUIRE(in);
  const auto corpus = nlohmann::ordered_json::parse(in);
  REQUIRE(corpus.size() >= 30);
  std::vector<double> front, first_mask;
  std::vector<uint64_t> mask(Matcher::mask_words(tokens->vocab_size()));
  for (const auto& [name, schema] : corpus.items()) {
    CAPTURE(name);
    const auto start = Clock::now();
    JsonSchemaResult result = compile_json_schema(schema.dump());
    auto compiled = CompiledGrammar::compile(std::move(result.grammar), tokens);
    const auto compiled_at = Clock::now();
    Matcher matcher(compiled);
    matcher.fill_mask(mask);
    const auto masked_at = Clock::now();
    CHECK(std::any_of(mask.begin(), mask.end(), [](uint64_t w) { return w != 0; }));
    front.push_back(std::chrono::duration<double, std::milli>(compiled_at - start).count());
    first_mask.push_back(std::chrono::duration<double, std::milli>(masked_at - start).count());
  }
  MESSAGE("schema compile over " << front.size() << " schemas: p50 " << percentile(front, 0.5) << " ms, p99 "
                                 << percentile(front, 0.99) << " ms; with the first mask (SmolLM2, 49k tokens): p50 "
                                 << percentile(first_mask, 0.5) << " ms, p99 " << percentile(first_mask, 0.99)
                                 << " ms");
}

}  // namespace
}  // namespace sluice::grammar
