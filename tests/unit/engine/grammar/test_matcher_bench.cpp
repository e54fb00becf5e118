// Mask time on real vocabularies (SmolLM2, 49k tokens; Gemma 3, 262k), printed, not
// asserted: a JSON document tokenized by the model's own tokenizer, matched token by
// token under a hand-built JSON grammar. Also checks, on every 4th (SmolLM2) or 16th
// (Gemma) step, that the masks agree with brute force over the whole vocabulary.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/grammar/matcher.h"
#include "engine/grammar/token_trie.h"
#include "engine/loader/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "tests/unit/engine/grammar/matcher_test_util.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::grammar::unit_engine_grammar_test_matcher_bench {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(SLUICE_FIXTURES_DIR).parent_path().parent_path() / "models";

const char* const kDocument =
    "{\"name\": \"Ada Lovelace\", \"born\": 1815, \"height_m\": 1.65, \"mathematician\": true,\n"
    " \"languages\": [\"English\", \"French\", \"Italian\"], \"children\": 3, \"spouse\": null,\n"
    " \"notes\": \"Wrote the first \\\"program\\\" (1843) for the Analytical Engine.\\nCaf\xC3\xA9 \xE2\x98\x95 \\u00e9\",\n"
    " \"address\": {\"city\": \"London\", \"street\": \"12 St James's Square\", \"zip\": null},\n"
    " \"scores\": [-12.5e3, 0.001, 42, 7], \"tags\": {\"field\": \"computing\", \"era\": \"Victorian\"}}";

std::shared_ptr<const TokenTable> table_of(const tokenizer::Tokenizer& tok) {
  const int32_t n = tok.vocab_size();
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<bool> special(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    bytes[static_cast<size_t>(id)] = tok.token_to_piece(id);
    special[static_cast<size_t>(id)] = tok.is_special(id);
  }
  const auto eos = tok.eos_ids();
  return std::make_shared<TokenTable>(std::move(bytes), std::move(special), std::vector<int32_t>(eos.begin(), eos.end()));
}

double micros_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

struct Pass {
  double total_us = 0, computed_us = 0, cached_us = 0, max_computed_us = 0;
  uint64_t num_computed = 0, num_cached = 0;
  bool accepted = true;
};

// One matcher through `ids`, timing fill_mask before each token and at the end;
// `check_every` > 0 also compares every such step's mask with brute force.
Pass run_pass(const std::shared_ptr<CompiledGrammar>& g, const std::vector<int32_t>& ids, size_t check_every) {
  Pass pass;
  Matcher m(g);
  testing::Mask mask(Matcher::mask_words(g->tokens().vocab_size()));
  for (size_t i = 0; i <= ids.size(); ++i) {
    const MatcherStats before = g->stats();
    const auto t0 = std::chrono::steady_clock::now();
    m.fill_mask(mask);
    const double us = micros_since(t0);
    pass.total_us += us;
    if (g->stats().masks_computed > before.masks_computed) {
      ++pass.num_computed;
      pass.computed_us += us;
      pass.max_computed_us = std::max(pass.max_computed_us, us);
    } else {
      ++pass.num_cached;
      pass.cached_us += us;
    }
    if (check_every > 0 && i % check_every == 0) CHECK(mask == testing::brute_force_mask(m));
    if (i == ids.size()) break;
    if (!testing::allows(mask, ids[i]) || !m.accept_token(ids[i])) {
      pass.accepted = false;
      break;
    }
  }
  pass.accepted = pass.accepted && m.is_complete();
  return pass;
}

void time_model(const std::string& name, const fs::path& path, size_t check_every) {
  if (!sluice::testing::has_model_file(path, "grammar matcher mask time on " + name)) return;
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(loader::GgufFile::open(path));
  auto t0 = std::chrono::steady_clock::now();
  const auto table = table_of(tok);
  const double table_ms = micros_since(t0) / 1000;
  const std::vector<int32_t> ids = tok.encode(kDocument, false, false);
  REQUIRE(tok.decode(ids, false) == kDocument);

  t0 = std::chrono::steady_clock::now();
  const auto g = CompiledGrammar::compile(testing::json_grammar(), table);
  const double compile_us = micros_since(t0);
  const Pass cold = run_pass(g, ids, check_every);
  const Pass warm = run_pass(g, ids, 0);
  CHECK(cold.accepted);
  CHECK(warm.accepted);
  CHECK(warm.num_computed == 0);
  const double steps = static_cast<double>(ids.size() + 1);
  MESSAGE(name << ": vocab " << tok.vocab_size() << ", token table + trie " << table_ms << " ms ("
               << table->trie().num_nodes() << " trie nodes), compile "
               << compile_us << " us, " << ids.size() << " document tokens");
  MESSAGE(name << " first pass: " << cold.total_us / steps << " us/token mean; " << cold.num_computed
               << " masks computed (mean " << cold.computed_us / std::max<double>(1, cold.num_computed) << " us, max "
               << cold.max_computed_us << " us), " << cold.num_cached << " from cache (mean "
               << cold.cached_us / std::max<double>(1, cold.num_cached) << " us)");
  MESSAGE(name << " second pass (all cached): " << warm.total_us / steps << " us/token mean");
}

TEST_CASE("grammar matcher: mask time (printed, not asserted)") {
  time_model("SmolLM2", kModels / "SmolLM2-135M-Instruct.Q4_1.gguf", 4);
  time_model("Gemma 3", kModels / "gemma-3-270m-q4_k_m.gguf", 16);
}

}  // namespace
}  // namespace sluice::grammar
