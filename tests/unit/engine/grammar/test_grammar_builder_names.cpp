// GrammarBuilder::add_rule's unique names and nullable_rules: the two pieces of the
// builder the text front ends lean on hardest (thousands of rules under one name,
// long chains of rules that can match "").
#include <doctest/doctest.h>

#include "engine/grammar/grammar_builder.h"

namespace sluice::grammar::unit_engine_grammar_test_grammar_builder_names {
namespace {

TEST_CASE("builder: a taken name gets the next free numbered suffix") {
  GrammarBuilder b;
  CHECK(b.rule(b.add_rule("x")).name == "x");
  CHECK(b.rule(b.add_rule("x")).name == "x-1");
  CHECK(b.rule(b.rule_named("x-3")).name == "x-3");
  CHECK(b.rule(b.add_rule("x")).name == "x-2");
  CHECK(b.rule(b.add_rule("x")).name == "x-4");  // x-3 is taken
  CHECK(b.rule(b.add_rule("")).name == "rule");
  CHECK(b.rule(b.add_rule("")).name == "rule-1");
}

TEST_CASE("nullable_rules: a chain defined before the rules it depends on") {
  // r0 ::= r1 r1, r1 ::= r2, ..., r(n-1) ::= "" | "a"; and s ::= "b" r0 (never nullable).
  constexpr uint32_t n = 50;
  std::vector<Rule> rules(n + 1);
  for (uint32_t i = 0; i + 1 < n; ++i)
    rules[i].alternatives = {{{Element::Kind::rule, i + 1}, {Element::Kind::rule, i + 1}}};
  rules[n - 1].alternatives = {{}, {{Element::Kind::bytes, 0}}};
  rules[n].alternatives = {{{Element::Kind::bytes, 1}, {Element::Kind::rule, 0}}};
  const std::vector<char> nullable = nullable_rules(rules);
  for (uint32_t i = 0; i < n; ++i) CHECK(nullable[i]);
  CHECK_FALSE(nullable[n]);
  rules[n - 1].alternatives = {{{Element::Kind::bytes, 0}}};
  for (char v : nullable_rules(rules)) CHECK_FALSE(v);
}

}  // namespace
}  // namespace sluice::grammar
