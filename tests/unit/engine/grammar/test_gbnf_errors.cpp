// parse_gbnf's refusals: each with its exact line and column (1-based, columns in code
// points) and a message that says what is wrong.
#include <doctest/doctest.h>

#include <string>

#include "engine/grammar/gbnf.h"

namespace sluice::grammar::unit_engine_grammar_test_gbnf_errors {
namespace {

struct Refusal {
  std::string where;
  std::string message;
};

Refusal refusal(const std::string& gbnf, const GrammarLimits& limits = {}) {
  try {
    parse_gbnf(gbnf, limits);
  } catch (const GrammarError& e) {
    return {e.where(), e.what()};
  }
  return {"accepted", ""};
}

void check_refused(const std::string& gbnf, const std::string& where, const std::string& says,
                   const GrammarLimits& limits = {}) {
  const Refusal r = refusal(gbnf, limits);
  INFO("grammar: " << gbnf);
  INFO("message: " << r.message);
  CHECK(r.where == where);
  CHECK(r.message.find(says) != std::string::npos);
}

TEST_CASE("gbnf errors: syntax") {
  check_refused("root ::= \"abc", "line 1, column 10", "string literal is never closed");
  check_refused("root ::= \"a\"\nitem ::= [a-z", "line 2, column 10", "character class is never closed");
  check_refused("root \"a\"", "line 1, column 6", "expecting '::='");
  check_refused("root := \"a\"", "line 1, column 6", "expecting '::='");
  check_refused("root ::= \"a\"\n\n  ::= \"b\"", "line 3, column 3", "expecting a rule name");
  check_refused("root ::= \"\\q\"", "line 1, column 11", "unknown escape '\\q'");
  check_refused("root ::= \"\xC3\xA9\\q\"", "line 1, column 12", "unknown escape");  // columns count code points
  check_refused("root ::= [\\x4]", "line 1, column 11", "needs 2 hex digits");
  check_refused("root ::= \"\\uD800\"", "line 1, column 11", "surrogate");
  check_refused("root ::= \"a\" ; \"b\"", "line 1, column 14", "expecting the end of the line, found ';'");
  check_refused("root ::= \"a\")", "line 1, column 13", "')' without a matching '('");
  check_refused("root ::= *\"a\"", "line 1, column 10", "nothing before '*' to repeat");
  check_refused("root ::= \"\"+", "line 1, column 12", "nothing before '+' to repeat");
  check_refused("root ::= [z-a]", "line 1, column 12", "range out of order");
  check_refused("root ::= [^\\x00-\\U0010FFFF]", "line 1, column 10", "matches no character");
  check_refused("root ::= <think>", "line 1, column 10", "token references");
  check_refused("root ::= \"\xFF\"", "line 1, column 11", "invalid UTF-8");
  // After ::= a line break is allowed, so the next line's name is read as a reference.
  check_refused("root ::=\nx ::= \"u\"", "line 2, column 3", "expecting the end of the line");
}

TEST_CASE("gbnf errors: groups") {
  check_refused("root ::= (\"a\" \"b\"", "line 1, column 18", "expecting ')' to close the group at line 1, column 10");
  check_refused("root ::= (\"a\"\n  | \"b\"\n\nnext ::= \"c\"", "line 4, column 6",
                "expecting ')' to close the group at line 1, column 10");
}

TEST_CASE("gbnf errors: repetition bounds") {
  check_refused("root ::= \"a\"{2", "line 1, column 15", "expecting '}'");
  check_refused("root ::= \"a\"{x}", "line 1, column 14", "expecting a number");
  check_refused("root ::= \"a\"{3,2}", "line 1, column 13", "m greater than n");
  check_refused("root ::= \"a\"{1001}", "line 1, column 13", "over the limit of 1000");
  check_refused("root ::= \"a\"{0,1001}", "line 1, column 13", "over the limit of 1000");
  check_refused("root ::= \"a\"{99999999999999999999,}", "line 1, column 13", "over the limit of 1000");
  CHECK(refusal("root ::= \"a\"{0,1000}").where == "accepted");
}

TEST_CASE("gbnf errors: undefined rules, at their first use; a missing root") {
  check_refused("root ::= a b\na ::= \"x\" b\n", "line 1, column 12", "rule 'b' is not defined");
  check_refused("root ::= \"x\"\nother ::= (\"y\" | missing-rule)\n", "line 2, column 18",
                "rule 'missing-rule' is not defined");
  const Refusal no_root = refusal("start ::= \"x\"\n");
  CHECK(no_root.where.empty());
  CHECK(no_root.message.find("no rule named 'root'") != std::string::npos);
}

TEST_CASE("gbnf errors: left recursion names the rule and where it is defined") {
  check_refused("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n", "line 2, column 1",
                "rule 'expr' is left-recursive");
  // Through a group and an optional item: the generated rules map back to `list`.
  check_refused("root ::= list\n  list ::= (\"x\"? list \",\")? \"y\"\n", "line 2, column 3",
                "rule 'list' is left-recursive");
  // Through two rules.
  const Refusal mutual = refusal("root ::= a\na ::= b \"1\" | \"2\"\nb ::= a \"3\"\n");
  CHECK((mutual.where == "line 2, column 1" || mutual.where == "line 3, column 1"));
  CHECK(mutual.message.find("left-recursive") != std::string::npos);
}

TEST_CASE("gbnf errors: limits") {
  GrammarLimits small;
  small.max_input_bytes = 20;
  check_refused("root ::= \"a\"\n# a comment past the limit\n", "line 2, column 8", "over the limit of 20 bytes",
                small);

  GrammarLimits shallow;
  shallow.max_depth = 3;
  CHECK(refusal("root ::= (((\"a\")))", shallow).where == "accepted");
  check_refused("root ::= ((((\"a\"))))", "line 1, column 13", "nested deeper than the limit of 3", shallow);

  GrammarLimits few;
  few.max_elements = 500;
  check_refused("root ::= [a-z]{0,1000}", "line 1, column 15", "over the limit of 500 elements", few);
  check_refused("root ::= [a-z]{0,100}\nx ::= [a-z]{0,100}\n", "line 2, column 12", "over the limit of 500 elements",
                few);
  // Nested repetition multiplies the language, not the grammar.
  CHECK(refusal("root ::= ((\"ab\"{0,1000}){0,1000}){0,1000}").where == "accepted");
}

}  // namespace
}  // namespace sluice::grammar
