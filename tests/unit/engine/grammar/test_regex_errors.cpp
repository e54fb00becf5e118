// The regex front end's refusals, each with its offset (bytes into the pattern) and a
// message that names what is not supported.
#include <doctest/doctest.h>

#include <string>

#include "engine/grammar/regex.h"

namespace sluice::grammar::unit_engine_grammar_test_regex_errors {
namespace {

struct Refusal {
  std::string where;
  std::string message;
};

Refusal refusal(const std::string& pattern, const GrammarLimits& limits = {}) {
  try {
    compile_regex(pattern, limits);
  } catch (const GrammarError& e) {
    return {e.where(), e.what()};
  }
  return {"accepted", ""};
}

void check_refused(const std::string& pattern, size_t offset, const std::string& says,
                   const GrammarLimits& limits = {}) {
  const Refusal r = refusal(pattern, limits);
  INFO("pattern: " << pattern);
  INFO("message: " << r.message);
  CHECK(r.where == "offset " + std::to_string(offset));
  CHECK(r.message.find(says) != std::string::npos);
}

TEST_CASE("regex errors: unsupported features") {
  check_refused("(a)\\1", 3, "backreferences");
  check_refused("(?<x>a)\\k<x>", 7, "named backreferences");
  check_refused("(?=a)", 0, "lookahead");
  check_refused("a(?!b)", 1, "lookahead");
  check_refused("(?<=a)b", 0, "lookbehind");
  check_refused("x(?<!a)b", 1, "lookbehind");
  check_refused("a\\bc", 1, "word boundaries");
  check_refused("\\B", 0, "word boundaries");
  check_refused("(?i)a", 0, "unsupported group");
  check_refused("\\p{L}", 0, "Unicode property escapes");
  check_refused("\\P{L}", 0, "Unicode property escapes");
  check_refused("\\01", 0, "octal");
  check_refused("x\\a", 1, "unknown escape '\\a'");
  check_refused("[\\1]", 1, "backreferences");
  check_refused("[\\B]", 1, "word boundaries");
}

TEST_CASE("regex errors: anchors anywhere but the ends") {
  check_refused("a^", 1, "'^' is supported only at the very start");
  check_refused("a|^b", 2, "'^' is supported only at the very start");
  check_refused("(^a)", 1, "'^' is supported only at the very start");
  check_refused("a$b", 1, "'$' is supported only at the very end");
  check_refused("a$|b", 1, "'$' is supported only at the very end");
  check_refused("(a$)", 2, "'$' is supported only at the very end");
  check_refused("^*", 1, "nothing to repeat");
}

TEST_CASE("regex errors: syntax") {
  check_refused("*a", 0, "nothing to repeat before '*'");
  check_refused("a|+", 2, "nothing to repeat before '+'");
  check_refused("(?)", 0, "unsupported group");
  check_refused("a**", 2, "nothing to repeat before '*'");
  check_refused("a{2}{3}", 4, "nothing to repeat before '{'");
  check_refused("{2}", 0, "nothing to repeat before '{'");
  check_refused("a{", 1, "must be escaped as \\{");
  check_refused("a{,5}", 1, "must be escaped as \\{");
  check_refused("a{2,x}", 1, "must be escaped as \\{");
  check_refused("x(a", 1, "group is never closed");
  check_refused("a)", 1, "')' without a matching '('");
  check_refused("[ab", 0, "class '[' is never closed");
  check_refused("x[]", 1, "class matches no character");
  check_refused("[b-a]", 2, "range out of order");
  check_refused("[\\d-z]", 3, "a range in a class needs a character at each end");
  check_refused("[a-\\w]", 2, "a range in a class needs a character at each end");
  check_refused("a\\", 1, "lone backslash");
  check_refused("\\x4g", 0, "\\x needs 2 hex digits");
  check_refused("\\u12", 0, "\\u needs 4 hex digits");
  check_refused("\\u{110000}", 0, "past U+10FFFF");
  check_refused("\\u{}", 0, "needs hex digits");
  check_refused("\\u{41", 0, "closing '}'");
  check_refused("ab\\uD800", 2, "lone surrogate");
  check_refused("\\uDE00\\uD83D", 0, "lone surrogate");
  check_refused("\\c1", 0, "\\c needs a letter");
  check_refused("a\xFF", 1, "invalid UTF-8");
  check_refused("[\xC3]", 1, "invalid UTF-8");
  check_refused("(?<1a>x)", 0, "invalid group name");
  check_refused("(?<n>a)(?<n>b)", 7, "duplicate group name");
}

TEST_CASE("regex errors: limits") {
  check_refused("a{1001}", 1, "over the limit of 1000");
  check_refused("a{0,1001}", 1, "over the limit of 1000");
  check_refused("a{99999999999999999999}", 1, "over the limit of 1000");
  check_refused("a{3,2}", 1, "numbers out of order");
  CHECK(refusal("a{1000}").where == "accepted");

  GrammarLimits small;
  small.max_input_bytes = 4;
  check_refused("abcdef", 4, "over the limit of 4 bytes", small);

  GrammarLimits shallow;
  shallow.max_depth = 3;
  CHECK(refusal("(((a)))", shallow).where == "accepted");
  check_refused("(((a)(((b)))))", 6, "nested deeper than the limit of 3", shallow);

  GrammarLimits few;
  few.max_elements = 500;
  check_refused("x[a-z]{0,1000}", 6, "over the limit of 500 elements", few);
  CHECK(refusal("((ab{0,1000}){0,1000}){0,1000}").where == "accepted");  // a grammar, not an expansion
}

}  // namespace
}  // namespace sluice::grammar
