// Structured outputs in the engine loop (tiny fixture model, CPU backend): every
// constrained output matches its grammar, a constrained sequence's tokens do not
// depend on the rest of the batch or on preemption, and the grammar's end is the
// choice's end.
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar_tokens.h"
#include "tests/unit/engine/engine_harness.h"

namespace sluice::engine::testing::unit_engine_test_engine_grammar {
namespace {

using grammar::GrammarBuilder;

// "[a-d]{2,8}" followed by "!": terminated once the "!" is out (only EOS may follow).
grammar::Grammar letters_then_bang() {
  GrammarBuilder b;
  const uint32_t letter = b.codepoints({{'a', 'd'}}, false, "letter");
  const uint32_t word = b.repeat(GrammarBuilder::ref(letter), 2, 8, "word");
  const uint32_t root = b.add_rule("root");
  grammar::Alternative body{GrammarBuilder::ref(word)};
  body.push_back(b.byte('!'));
  b.add_alternative(root, body);
  return std::move(b).build(root);
}

// "{" [a-z]* "}": EOS is allowed only after the closing brace.
grammar::Grammar braced() {
  GrammarBuilder b;
  const uint32_t letter = b.codepoints({{'a', 'z'}}, false, "letter");
  const uint32_t letters = b.repeat(GrammarBuilder::ref(letter), 0, -1, "letters");
  const uint32_t root = b.add_rule("root");
  grammar::Alternative body{b.byte('{'), GrammarBuilder::ref(letters), b.byte('}')};
  b.add_alternative(root, body);
  return std::move(b).build(root);
}

// [a-z]*: complete at every point, never terminated: only EOS or the token limit ends it.
grammar::Grammar any_letters() {
  GrammarBuilder b;
  const uint32_t letter = b.codepoints({{'a', 'z'}}, false, "letter");
  return std::move(b).build(b.repeat(GrammarBuilder::ref(letter), 0, -1, "root"));
}

std::shared_ptr<grammar::CompiledGrammar> compile(const LoadedFixture& f, grammar::Grammar g) {
  return grammar::CompiledGrammar::compile(
      std::move(g), make_token_table(*f.tokenizer, static_cast<int32_t>(f.model->hparams().vocab_size)));
}

GenerationRequest constrained(std::string id, uint32_t prompt_seed, std::shared_ptr<grammar::CompiledGrammar> g,
                              int32_t max_tokens = 40, std::optional<uint64_t> seed = std::nullopt) {
  GenerationRequest r = greedy_request(std::move(id), make_prompt(prompt_seed, 20), max_tokens);
  r.params.ignore_eos = false;
  if (seed) {
    r.params.temperature = 1.0f;
    r.params.seed = seed;
  }
  r.grammar = std::move(g);
  return r;
}

ChoiceResult run_one(Engine& engine, GenerationRequest request) {
  auto submitted = engine.submit(std::move(request));
  INFO(submitted.message);
  REQUIRE(submitted.ok());
  auto result = collect(*submitted.stream);
  REQUIRE(result[0].finished);
  return result[0];
}

TEST_CASE("constrained outputs match their grammar and end with it") {
  LoadedFixture f = load_engine_fixture("llama");
  Engine engine(*f.model, *f.tokenizer, small_config());
  engine.start();
  const auto bang = compile(f, letters_then_bang());
  for (uint64_t seed : {1u, 2u, 3u, 4u}) {
    CAPTURE(seed);
    const ChoiceResult r = run_one(engine, constrained("bang" + std::to_string(seed), 5, bang, 40, seed));
    CHECK(r.finish.finish_reason() == "stop");
    CHECK(std::regex_match(r.text, std::regex("[a-d]{2,8}!")));
  }
  // ignore_eos cannot keep a terminated grammar going: the choice stops at its end.
  GenerationRequest ignoring = constrained("ignore-eos", 6, bang, 40, 7);
  ignoring.params.ignore_eos = true;
  const ChoiceResult r = run_one(engine, std::move(ignoring));
  CHECK(r.finish.finish_reason() == "stop");
  CHECK(std::regex_match(r.text, std::regex("[a-d]{2,8}!")));

  // EOS is forbidden until the closing brace: a stop always has it.
  const auto brace = compile(f, braced());
  for (uint64_t seed : {11u, 12u, 13u}) {
    const ChoiceResult b = run_one(engine, constrained("brace" + std::to_string(seed), 8, brace, 30, seed));
    if (b.finish.finish_reason() == "stop") CHECK(std::regex_match(b.text, std::regex("\\{[a-z]*\\}")));
    else CHECK(std::regex_match(b.text, std::regex("\\{[a-z]*")));
  }
  // A grammar that only EOS or the limit can end.
  const ChoiceResult letters = run_one(engine, constrained("letters", 9, compile(f, any_letters()), 12, 21));
  CHECK(std::regex_match(letters.text, std::regex("[a-z]*")));
  CHECK(wait_idle(engine));
}

TEST_CASE("constrained tokens do not depend on the batch, on n, or on preemption") {
  LoadedFixture f = load_engine_fixture("llama");
  const auto brace = compile(f, braced());
  const auto bang = compile(f, letters_then_bang());
  auto request = [&](int i) {
    const bool sampled = i % 2 == 1;
    return constrained("r" + std::to_string(i), 300 + static_cast<uint32_t>(i), i % 3 == 0 ? bang : brace, 24,
                       sampled ? std::optional<uint64_t>(40 + i) : std::nullopt);
  };
  std::vector<std::vector<int32_t>> alone;
  {
    Engine engine(*f.model, *f.tokenizer, small_config());
    engine.start();
    for (int i = 0; i < 6; ++i) alone.push_back(run_one(engine, request(i)).tokens);
  }
  SUBCASE("in one batch with unconstrained requests") {
    Engine engine(*f.model, *f.tokenizer, small_config());
    engine.start();
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int i = 0; i < 6; ++i) {
      streams.push_back(engine.submit(request(i)).stream);
      streams.push_back(engine.submit(greedy_request("free" + std::to_string(i), make_prompt(400 + i, 30), 24)).stream);
    }
    for (int i = 0; i < 6; ++i) {
      CAPTURE(i);
      CHECK(collect(*streams[static_cast<size_t>(2 * i)])[0].tokens == alone[static_cast<size_t>(i)]);
    }
  }
  SUBCASE("under a KV pool small enough to preempt") {
    EngineConfig config = small_config();
    config.kv_cache_bytes = KvCache::bytes_per_block(f.model->hparams(), 16, backends::DType::F32) * 6;
    config.enable_prefix_caching = false;
    Engine engine(*f.model, *f.tokenizer, config);
    engine.start();
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int i = 0; i < 6; ++i) streams.push_back(engine.submit(request(i)).stream);
    for (int i = 0; i < 6; ++i) {
      CAPTURE(i);
      CHECK(collect(*streams[static_cast<size_t>(i)])[0].tokens == alone[static_cast<size_t>(i)]);
    }
    CHECK(engine.stats().num_preemptions > 0);
  }
  SUBCASE("n = 3: every choice follows the grammar with its own matcher") {
    Engine engine(*f.model, *f.tokenizer, small_config());
    engine.start();
    GenerationRequest r = constrained("n3", 77, bang, 30, 5);
    r.params.n = 3;
    auto submitted = engine.submit(std::move(r));
    REQUIRE(submitted.ok());
    for (const ChoiceResult& choice : collect(*submitted.stream)) {
      CHECK(choice.finish.finish_reason() == "stop");
      CHECK(std::regex_match(choice.text, std::regex("[a-d]{2,8}!")));
    }
  }
}

}  // namespace
}  // namespace sluice::engine::testing

namespace sluice::engine::testing::unit_engine_test_engine_grammar {

TEST_CASE("a lazy grammar leaves free text free until its trigger, then holds the rest to the grammar") {
  LoadedFixture f = load_engine_fixture("llama");
  Engine engine(*f.model, *f.tokenizer, small_config());
  engine.start();
  const auto g = compile(f, braced());

  // The trigger never comes: the output is the unconstrained one, token for token.
  GenerationRequest free_request = constrained("free", 5, nullptr, 30, 11);
  const ChoiceResult unconstrained = run_one(engine, free_request);
  GenerationRequest lazy = constrained("lazy", 5, g, 30, 11);
  lazy.grammar_trigger = GrammarTrigger{};
  lazy.grammar_trigger->anywhere = {"<tool_call>"};
  REQUIRE(unconstrained.text.find("<tool_call>") == std::string::npos);
  CHECK(run_one(engine, lazy).tokens == unconstrained.tokens);

  // "{" is made the likeliest token: it comes first, starts the grammar ("{" [a-d]{2,8}
  // "}"), and the rest is held to it up to the closing brace, where the choice ends.
  GrammarBuilder b;
  const uint32_t letter = b.codepoints({{'a', 'd'}}, false, "letter");
  const uint32_t word = b.repeat(GrammarBuilder::ref(letter), 2, 8, "word");
  const uint32_t root = b.add_rule("root");
  b.add_alternative(root, {b.byte('{'), GrammarBuilder::ref(word), b.byte('}')});
  const auto bounded = compile(f, std::move(b).build(root));
  const std::vector<int32_t> brace = f.tokenizer->encode("{", false, false);
  REQUIRE(brace.size() == 1);
  for (uint64_t seed : {1, 2, 3}) {
    GenerationRequest triggered = constrained("brace" + std::to_string(seed), 7, bounded, 30, seed);
    triggered.params.logit_bias = make_logit_bias({{brace[0], 30.0f}});
    triggered.grammar_trigger = GrammarTrigger{};
    triggered.grammar_trigger->anywhere = {"{"};
    const ChoiceResult result = run_one(engine, triggered);
    INFO("seed " << seed << ": " << result.text);
    CHECK(std::regex_match(result.text, std::regex(R"(\{[a-d]{2,8}\})")));
    CHECK(result.finish.reason == FinishReason::stop);
  }
  engine.stop();
}

}  // namespace sluice::engine::testing
