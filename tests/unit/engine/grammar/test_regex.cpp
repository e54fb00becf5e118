// compile_regex and add_regex_search: a table of patterns with strings each must and
// must not match (hand-written ECMAScript expectations), and, for ASCII patterns,
// every short string over a small alphabet checked against std::regex's ECMAScript
// grammar (regex_match for the whole match, regex_search for the search).
#include <doctest/doctest.h>

#include <regex>
#include <string>
#include <vector>

#include "engine/grammar/regex.h"
#include "tests/unit/engine/grammar/grammar_recognizer.h"

namespace sluice::grammar::unit_engine_grammar_test_regex {
namespace {

using testing::accepts;

struct Case {
  std::string pattern;
  std::vector<std::string> good;
  std::vector<std::string> bad;
};

Grammar search_grammar(const std::string& pattern) {
  GrammarBuilder builder;
  const uint32_t root = add_regex_search(builder, pattern, "root");
  return std::move(builder).build(root);
}

void check_cases(const std::vector<Case>& cases, bool search) {
  for (const Case& c : cases) {
    INFO("pattern: " << c.pattern);
    const Grammar grammar = search ? search_grammar(c.pattern) : compile_regex(c.pattern);
    for (const std::string& text : c.good) {
      INFO("should match: " << text);
      CHECK(accepts(grammar, text));
    }
    for (const std::string& text : c.bad) {
      INFO("should not match: " << text);
      CHECK_FALSE(accepts(grammar, text));
    }
  }
}

TEST_CASE("regex: literals and escapes") {
  check_cases({
                  {"abc", {"abc"}, {"ab", "abcd", "", "ABC"}},
                  {"\\n\\t\\r\\f\\v\\0", {std::string("\n\t\r\f\v\0", 6)}, {"\\n\\t\\r\\f\\v\\0"}},
                  {"\\/\\.\\\\\\$\\^\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\-", {"/.\\$^*+?()[]{}|-"}, {"x"}},
                  {"a.b\\.c", {"axb.c"}, {"axbxc"}},
                  {"\\x41\\x7a", {"Az"}, {"\\x41\\x7a"}},
                  {"\\u00e9\\u4E2D", {"\xC3\xA9\xE4\xB8\xAD"}, {"e"}},
                  {"\\u{1F600}\\u{41}", {"\xF0\x9F\x98\x80" "A"}, {"A"}},
                  {"\\uD83D\\uDE00", {"\xF0\x9F\x98\x80"}, {""}},  // a surrogate pair is one code point
                  {"\\cJ\\ca", {"\n\x01"}, {"cJ"}},
                  {"caf\xC3\xA9 \xF0\x9F\x98\x80", {"caf\xC3\xA9 \xF0\x9F\x98\x80"}, {"cafe "}},
                  {"a]b}c", {"a]b}c"}, {"ab"}},
                  {"", {""}, {"a"}},
              },
              false);
}

TEST_CASE("regex: . is one code point other than a line terminator") {
  check_cases({{".", {"a", "\xC3\xA9", "\xF0\x9F\x98\x80", "\t", " "},
                {"\n", "\r", "\xE2\x80\xA8", "\xE2\x80\xA9", "", "ab", "\xFF"}}},
              false);
}

TEST_CASE("regex: classes") {
  check_cases({
                  {"[a-c0-2_]", {"a", "c", "1", "_"}, {"d", "3", "", "ab"}},
                  {"[^a-c]", {"d", "\xC3\xA9", "\n"}, {"a", "b", ""}},
                  {"[\\d]+", {"0123456789"}, {"a", "\xD9\xA3"}},  // \d is ASCII only
                  {"\\d\\D", {"1a", "2\xC3\xA9"}, {"12", "a1"}},
                  {"\\w+\\W", {"a_Z9-", "x\xC3\xA9"}, {"a_", "\xC3\xA9\xC3\xA9"}},
                  {"\\s", {" ", "\t", "\n", "\v", "\f", "\r", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x8A",
                           "\xE2\x80\xA8", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80", "\xEF\xBB\xBF"},
                   {"a", "\xE2\x80\x8B", ""}},  // U+200B is not a space
                  {"\\S", {"a", "\xE2\x80\x8B"}, {" ", "\xC2\xA0"}},
                  {"[\\s\\d]", {" ", "5", "\xE3\x80\x80"}, {"a"}},
                  {"[^\\s\\d]", {"a", "\xC3\xA9"}, {" ", "5", "\xE3\x80\x80"}},
                  {"[\\D]", {"a"}, {"5"}},
                  {"[^\\W]", {"a", "_"}, {"-", "\xC3\xA9"}},
                  {"[\\w-]+", {"a-b", "-"}, {"a b"}},
                  {"[-a]", {"-", "a"}, {"b"}},
                  {"[a-]", {"-", "a"}, {"b"}},
                  {"[\\b]", {"\b"}, {"b"}},
                  {"[\\]\\\\^]", {"]", "\\", "^"}, {"["}},
                  {"[\\x41-\\x43\\u00e0-\\u00e5]", {"B", "\xC3\xA2"}, {"D", "\xC3\xA6"}},
                  {"[\xCE\xB1-\xCF\x89]", {"\xCE\xB2"}, {"a", "\xCE\xA9"}},
                  {"[\\u{1F600}-\\u{1F64F}]", {"\xF0\x9F\x98\x80", "\xF0\x9F\x99\x8F"}, {"\xF0\x9F\x9A\x80"}},
                  {"[^]", {"\n", "a", "\xF0\x9F\x98\x80"}, {"", "ab"}},
                  {"[.]", {"."}, {"a"}},
              },
              false);
}

TEST_CASE("regex: groups, alternation, quantifiers") {
  check_cases({
                  {"a|bc|", {"a", "bc", ""}, {"b", "abc"}},
                  {"(ab|c)+", {"ab", "c", "abcab"}, {"", "a", "abb"}},
                  {"(?:ab)?c", {"c", "abc"}, {"ac", "ababc"}},
                  {"(?<year>\\d{4})-(?<month>\\d{2})", {"2024-01"}, {"24-01", "2024-1"}},
                  {"a*b+c?", {"b", "aabbc", "abc"}, {"", "ac", "abcc"}},
                  {"a{3}", {"aaa"}, {"aa", "aaaa"}},
                  {"a{2,}", {"aa", "aaaaaa"}, {"a"}},
                  {"a{1,3}b", {"ab", "aaab"}, {"b", "aaaab"}},
                  {"a{0}b", {"b"}, {"ab"}},
                  {"a*?b+?c??d{1,2}?", {"bd", "aabcdd"}, {"ad"}},  // lazy forms match the same strings
                  {"(a?)*b", {"b", "aab"}, {"ba"}},                // a body that can match "" under *
                  {"(a*|b)+c", {"c", "aabac"}, {"ca"}},
                  {"(?:)*x", {"x"}, {"xx"}},
                  {"((a|b)(c|d)){2}", {"acbd", "bcad"}, {"ac", "abcd"}},
                  {"^abc$", {"abc"}, {"xabc"}},  // anchors change nothing in a whole match
                  {"^a|b$", {"a", "b"}, {"ab"}},
              },
              false);
}

TEST_CASE("regex search: unanchored ends allow anything around the match") {
  check_cases({
                  {"abc", {"abc", "xxabcxx", "\xF0\x9F\x98\x80" "abc\n"}, {"ab", "acb", ""}},
                  {"^abc", {"abc", "abcx\n"}, {"xabc"}},
                  {"abc$", {"abc", "\nxabc"}, {"abcx"}},
                  {"^abc$", {"abc"}, {"abcabc", "xabc"}},
                  {"^a|b$", {"a", "axx", "xxb", "b"}, {"xa", "bx"}},  // ^ anchors a only, $ anchors b only
                  {"^$", {""}, {"a"}},
                  {"", {"", "anything"}, {}},
                  {"^\\d{3}-\\d{4}$", {"555-1234"}, {"555-12345", "x555-1234"}},
                  {"[aeiou]{2}", {"bookkeeper", "ee"}, {"bake", ""}},
              },
              true);
}

TEST_CASE("regex: add_regex adds one rule usable inside a larger grammar") {
  GrammarBuilder builder;
  const uint32_t number = add_regex(builder, "-?\\d+", "number");
  const uint32_t root = builder.add_rule("root");
  builder.set_alternatives(root, {{builder.byte('<'), GrammarBuilder::ref(number), builder.byte('>')}});
  const Grammar grammar = std::move(builder).build(root);
  CHECK(accepts(grammar, "<-12>"));
  CHECK_FALSE(accepts(grammar, "<->"));
  CHECK_FALSE(accepts(grammar, "-12"));
}

TEST_CASE("choice: exactly one of the strings") {
  const Grammar grammar = compile_choice({"yes", "no", "", "caf\xC3\xA9", "y"});
  for (const char* text : {"yes", "no", "", "caf\xC3\xA9", "y"}) CHECK(accepts(grammar, text));
  for (const char* text : {"yesno", "ye", "cafe", "n"}) CHECK_FALSE(accepts(grammar, text));
  CHECK_THROWS_AS(compile_choice({}), GrammarError);
  GrammarLimits small;
  small.max_input_bytes = 5;
  CHECK_THROWS_AS(compile_choice({"abc", "def"}, small), GrammarError);
}

// Every string over `alphabet` up to `max_length` characters.
std::vector<std::string> all_strings(const std::string& alphabet, size_t max_length) {
  std::vector<std::string> out{""};
  for (size_t begin = 0, length = 1; length <= max_length; ++length) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i)
      for (char c : alphabet) out.push_back(out[i] + c);
    begin = end;
  }
  return out;
}

TEST_CASE("regex: agrees with std::regex (ECMAScript) on every short string") {
  struct OracleCase {
    const char* pattern;
    const char* alphabet;
  };
  const OracleCase cases[] = {
      {"a(b|c)*d", "abcd"},        {"(a|ab)(c|bcd)", "abcd"},  {"a?b?c?", "abc"},
      {"(a*)*b", "ab"},            {"(a|b)*a(a|b){2}", "ab"},  {"[^ab]+", "abc\n"},
      {"\\d+(\\.\\d{1,2})?", "1.a"}, {"\\w\\W\\s\\S", "a- \n"}, {".+", "a\n\r"},
      {"(?:ab|a)(?:bc|c)?", "abc"}, {"a{2,3}b{0,1}", "ab"},     {"(a+?b*?)+?", "ab"},
      {"^a|b$", "abx"},            {"[a-c-]x|\\-", "ac-x"},    {"(a|)+b", "ab"},
      {"(ab){1,}", "abx"},         {"[\\s\\d]*x", " 1x\t"},    {"x(?:a|b|)(?:c|)y", "abcxy"},
  };
  for (const OracleCase& c : cases) {
    INFO("pattern: " << c.pattern);
    const std::regex oracle(c.pattern, std::regex::ECMAScript);
    const Grammar whole = compile_regex(c.pattern);
    const Grammar search = search_grammar(c.pattern);
    for (const std::string& text : all_strings(c.alphabet, 5)) {
      INFO("text: " << text);
      CHECK(accepts(whole, text) == std::regex_match(text, oracle));
      CHECK(accepts(search, text) == std::regex_search(text, oracle));
    }
  }
}

}  // namespace
}  // namespace sluice::grammar
