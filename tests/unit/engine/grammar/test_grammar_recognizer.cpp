// The test-only Earley recognizer (grammar_recognizer.h) on hand-built grammars, so that
// the front-end tests can trust what it says.
#include <doctest/doctest.h>

#include "engine/grammar/grammar_builder.h"
#include "tests/unit/engine/grammar/grammar_recognizer.h"

namespace sluice::grammar::unit_engine_grammar_test_grammar_recognizer {
namespace {

using testing::accepts;

TEST_CASE("recognizer: a^n b^n, nullable rules, byte classes") {
  GrammarBuilder b;
  // s ::= "a" s "b" | ""   (not regular: needs the stack)
  const uint32_t s = b.add_rule("s");
  b.set_alternatives(s, {{b.byte('a'), GrammarBuilder::ref(s), b.byte('b')}, {}});
  const Grammar g = std::move(b).build(s);
  CHECK(accepts(g, ""));
  CHECK(accepts(g, "ab"));
  CHECK(accepts(g, "aaabbb"));
  CHECK_FALSE(accepts(g, "aab"));
  CHECK_FALSE(accepts(g, "ba"));
  CHECK_FALSE(accepts(g, "abab"));
}

TEST_CASE("recognizer: nullable rules in the middle and at the end of a sequence") {
  GrammarBuilder b;
  const uint32_t opt = b.add_rule("opt");  // opt ::= "x" | ""
  b.set_alternatives(opt, {{b.byte('x')}, {}});
  const uint32_t two = b.add_rule("two");  // two ::= opt opt
  b.set_alternatives(two, {{GrammarBuilder::ref(opt), GrammarBuilder::ref(opt)}});
  const uint32_t root = b.add_rule("root");  // root ::= "<" two ">" two
  ByteSet digits;
  for (char c = '0'; c <= '9'; ++c) digits.set(static_cast<uint8_t>(c));
  b.set_alternatives(root, {{b.byte('<'), GrammarBuilder::ref(two), b.byte('>'), GrammarBuilder::ref(two), b.bytes(digits)}});
  const Grammar g = std::move(b).build(root);
  CHECK(accepts(g, "<>7"));
  CHECK(accepts(g, "<xx>x0"));
  CHECK(accepts(g, "<x>xx9"));
  CHECK_FALSE(accepts(g, "<xxx>1"));
  CHECK_FALSE(accepts(g, "<>"));
  CHECK_FALSE(accepts(g, "<>a"));
}

}  // namespace
}  // namespace sluice::grammar
