// The pushdown automaton under tight limits: dropped transition rows come back the
// same, and a grammar past a hard limit is a GrammarError, not unbounded growth.
#include "engine/grammar/pushdown.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "engine/grammar/grammar_builder.h"

namespace sluice::grammar::unit_engine_grammar_test_pushdown {
namespace {

// s ::= "(" s ")" s | "x" | ""
Grammar nested_grammar() {
  GrammarBuilder b;
  const uint32_t s = b.add_rule("s");
  b.set_alternatives(s, {{b.byte('('), GrammarBuilder::ref(s), b.byte(')'), GrammarBuilder::ref(s)}, {b.byte('x')}, {}});
  return std::move(b).build(s);
}

// The state after `text`, or kDead.
uint32_t run(Pushdown& p, std::string_view text) {
  uint32_t state = p.start();
  for (char c : text) {
    state = p.compute_row(state)[static_cast<uint8_t>(c)];
    if (state == Pushdown::kDead) break;
  }
  return state;
}

TEST_CASE("grammar pushdown: rows dropped for room are computed again the same") {
  const Grammar g = nested_grammar();
  Pushdown roomy(g);
  PushdownLimits tight;
  tight.max_rows = 2;
  Pushdown cramped(g, tight);
  for (const char* text : {"((x)x)", "(()(x))()", "((((((((x))))))))", "(x", "x(", ")", "((x)))"}) {
    CAPTURE(text);
    const uint32_t a = run(roomy, text), b = run(cramped, text);
    CHECK(a == b);  // interning is deterministic: the same ids in the same order
    CHECK((a == Pushdown::kDead) == (b == Pushdown::kDead));
    if (a != Pushdown::kDead) CHECK(roomy.is_complete(a) == cramped.is_complete(b));
  }
  CHECK(run(roomy, "(()(x))()") != Pushdown::kDead);
  CHECK(roomy.is_complete(run(roomy, "(()(x))()")));
  CHECK_FALSE(roomy.is_complete(run(roomy, "((x)")));
  CHECK(run(roomy, "())") == Pushdown::kDead);
}

TEST_CASE("grammar pushdown: past a hard limit is a GrammarError") {
  const Grammar g = nested_grammar();
  PushdownLimits few_states;
  few_states.max_states = 8;
  Pushdown deep(g, few_states);
  CHECK_THROWS_AS(run(deep, std::string(64, '(')), GrammarError);  // one new state per depth

  PushdownLimits one_stack;
  one_stack.max_stacks_per_state = 1;
  CHECK_THROWS_AS(Pushdown(g, one_stack), GrammarError);  // the start state has three

  PushdownLimits few_nodes;
  few_nodes.max_nodes = 6;
  Pushdown shallow(g, few_nodes);
  CHECK_THROWS_AS(run(shallow, std::string(64, '(')), GrammarError);
}

}  // namespace
}  // namespace sluice::grammar
