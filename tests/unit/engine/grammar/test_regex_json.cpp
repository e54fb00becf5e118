// add_regex_json_string_content: the pattern constrains the JSON string's VALUE, and
// the grammar matches the content as JSON writes it (" \ and controls escaped, the
// rest literal).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/grammar/regex.h"
#include "tests/unit/engine/grammar/grammar_recognizer.h"

namespace sluice::grammar::unit_engine_grammar_test_regex_json {
namespace {

using testing::accepts;

// A grammar for a whole JSON string: "<content>".
Grammar json_string(const std::string& pattern, bool search) {
  GrammarBuilder builder;
  const uint32_t content = add_regex_json_string_content(builder, pattern, search, "content");
  const uint32_t root = builder.add_rule("root");
  builder.set_alternatives(root, {{builder.byte('"'), GrammarBuilder::ref(content), builder.byte('"')}});
  return std::move(builder).build(root);
}

void check(const std::string& pattern, bool search, const std::vector<std::string>& good,
           const std::vector<std::string>& bad) {
  INFO("pattern: " << pattern << (search ? " (search)" : " (whole)"));
  const Grammar grammar = json_string(pattern, search);
  for (const std::string& text : good) {
    INFO("should accept: " << text);
    CHECK(accepts(grammar, text));
  }
  for (const std::string& text : bad) {
    INFO("should reject: " << text);
    CHECK_FALSE(accepts(grammar, text));
  }
}

TEST_CASE("regex json content: quotes and backslashes in the value are escaped in the content") {
  check("a\"b\\\\c", false, {R"("a\"b\\c")"}, {R"("a"b\c")", R"("a\"b\c")", R"("a\u0022b\\c")"});
  check("[\"\\\\]+", false, {R"("\"\\\"")"}, {R"(""")", R"("\")"});
}

TEST_CASE("regex json content: controls appear as JSON's escapes") {
  check("a.b", false, {R"("a\tb")", R"("a\"b")", R"("a\\b")", R"("a\u0001b")", R"("a\u001bb")", R"("a\u001Bb")",
                       "\"a\xC3\xA9" "b\""},
        {R"("a\nb")", "\"a\tb\"", "\"a\x01" "b\"", R"("a"b")", R"("a\/b")"});  // . excludes \n; raw controls never
  check("\\s+", false, {R"("\n\t ")", R"("\r\f\u000b")", "\"\xC2\xA0\""}, {"\"\t\"", "\"\n\"", R"("\u0009")"});
  check("[\\x00-\\x1f]", false, {R"("\u0000")", R"("\b")", R"("\u001f")", R"("\u001F")", R"("\n")"},
        {R"("\u0008")", R"("\u000a")", R"("\u0020")", "\" \""});
  check("\\n", false, {R"("\n")"}, {"\"\n\"", R"("\u000a")"});
}

TEST_CASE("regex json content: negated classes include the escaped forms") {
  check("^[^\"]*$", true, {R"("abc")", R"("a\\b")", R"("\n")", R"("")", "\"\xF0\x9F\x98\x80\""},
        {R"("a\"b")", "\"a\nb\"", R"("a"b")"});
  check("[^a]", false, {R"("\"")", R"("\\")", R"("b")"}, {R"("a")", R"("")"});
}

TEST_CASE("regex json content: search lets any escaped content around the match") {
  check("x", true, {R"("x")", R"("ab\"x\\")", R"("\u0001x\n")", "\"\xE4\xB8\xAD" "x\""},
        {R"("y")", "\"\x01x\"", R"("\/x")", R"(""x")"});
  check("^x", true, {R"("x\"")"}, {R"("\"x")"});
  check("x$", true, {R"("\"x")"}, {R"("x\"")"});
}

TEST_CASE("regex json content: whole match with a real-world pattern") {
  check("^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}$", true, {R"("jo.doe+x@example.co")"},
        {R"("jo@example")", R"("jo doe@example.com")"});
}

}  // namespace
}  // namespace sluice::grammar
