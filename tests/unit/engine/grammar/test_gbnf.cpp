// parse_gbnf: grammars in the style of the ones llama.cpp ships (written here, not
// copied), every escape, UTF-8 classes, repetition, and the layout rules of the syntax.
// Acceptance is checked with the test-only recognizer (grammar_recognizer.h).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "tests/unit/engine/grammar/grammar_recognizer.h"

namespace sluice::grammar::unit_engine_grammar_test_gbnf {
namespace {

using testing::accepts;

void check_language(const char* gbnf, const std::vector<std::string>& good, const std::vector<std::string>& bad) {
  const Grammar grammar = parse_gbnf(gbnf);
  for (const std::string& text : good) {
    INFO("should accept: " << text);
    CHECK(accepts(grammar, text));
  }
  for (const std::string& text : bad) {
    INFO("should reject: " << text);
    CHECK_FALSE(accepts(grammar, text));
  }
}

TEST_CASE("gbnf: arithmetic with precedence, parentheses and optional spaces") {
  check_language(R"g(# sums and products of numbers
root    ::= sum
sum     ::= product (space [+-] space product)*
product ::= factor (space [*/] space factor)*
factor  ::= number | "(" space sum space ")" | "-" factor
number  ::= [0-9]+ ("." [0-9]+)?
space   ::= " "?
)g",
                 {"1+2", "(1 + 2) * 3", "-4/2.5", "((7))", "10 - -3", "2*(3+4)/5"},
                 {"", "1+", "(1", "1++2", "1 +  2", "1.", "a+1", "(1+2))"});
}

TEST_CASE("gbnf: JSON with escapes, nested values and whitespace") {
  check_language(R"g(root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
    member
    ("," ws member)*
  )? "}" ws
member ::= string ":" ws value
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\"" ws
number ::= "-"? ("0" | [1-9] [0-9]*) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? ws
ws     ::= ([ \t\n] ws)?
)g",
                 {R"({"a": [1, 2.5e3, true, null], "b": {"c": "x\"y\u00e9"}})", "[]", "\"h\xC3\xA9llo \xF0\x9F\x98\x80\"",
                  "-0.5", "{ }", "[\n  1,\n  2\n]", "\"\\\\\""},
                 {R"({"a" 1})", "[1,]", "01", R"("\x")", "\"a\nb\"", "{\"a\":1,}", "tru", "[1 2]"});
}

TEST_CASE("gbnf: a markdown list") {
  check_language(R"g(root ::= item+
item ::= "- " [^\n]+ "\n"
)g",
                 {"- milk\n", "- milk\n- eggs \xF0\x9F\xA5\x9A\n"}, {"", "- \n", "milk\n", "- milk", "- a\n\n"});
}

TEST_CASE("gbnf: a C-like language") {
  check_language(R"g(root      ::= function+
function  ::= type " " ident "(" params? ")" ws block ws
type      ::= "int" | "void" | "float"
params    ::= param (", " param)*
param     ::= type " " ident
block     ::= "{" ws statement* "}"
statement ::= ( "return" (" " expr)?
              | type " " ident " = " expr
              | ident " = " expr ) ";" ws
expr      ::= term (" " [-+*/<>] " " term)*
term      ::= ident | [0-9]+ | ident "(" (expr (", " expr)*)? ")" | "(" expr ")"
ident     ::= [a-zA-Z_] [a-zA-Z0-9_]*
ws        ::= [ \t\n]*
)g",
                 {"int add(int a, int b) {\n  return a + b;\n}\n", "void f() {}",
                  "float g(float x) { float y = x * 2; y = f(y, 1); return; }"},
                 {"int f( {}", "int 1f() {}", "int f() { return a + ; }", "int f() {} x"});
}

TEST_CASE("gbnf: chess moves in algebraic notation") {
  check_language(R"g(root      ::= move-pair (" " move-pair)*
move-pair ::= [1-9] [0-9]? ". " move " " move
move      ::= (pawn | piece | castle) [+#]?
pawn      ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
piece     ::= [NBRQK] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle    ::= "O-O" "-O"?
)g",
                 {"1. e4 e5 2. Nf3 Nc6 3. Bb5 a6", "1. O-O-O Qxd8+", "12. exd8=Q# Kxd8"},
                 {"1. e9 e5", "1.e4 e5", "1. Kz3 e5", "1. e4", "1. e4 e5 "});
}

TEST_CASE("gbnf: every escape in literals and classes") {
  check_language(R"g(root ::= "\n\r\t\\\"\[\]\x41\u00e9\U0001F600" [\x30-\x39] [\u03b1] [\]\[\\\"]
)g",
                 {"\n\r\t\\\"[]A\xC3\xA9\xF0\x9F\x98\x80" "5\xCE\xB1]", "\n\r\t\\\"[]A\xC3\xA9\xF0\x9F\x98\x80" "0\xCE\xB1\""},
                 {"\n\r\t\\\"[]A\xC3\xA9\xF0\x9F\x98\x80" "a\xCE\xB1]", "\\n\\r"});
  // \xHH is a code point (U+00FF, two UTF-8 bytes), not a raw byte, as in llama.cpp.
  check_language("root ::= \"\\xff\"\n", {"\xC3\xBF"}, {"\xFF"});
}

TEST_CASE("gbnf: UTF-8 character classes") {
  check_language("root ::= [\xCE\xB1-\xCF\x89]+\n", {"\xCE\xB1\xCE\xB2\xCE\xB3\xCF\x89"},
                 {"a", "\xCE\xA9", "", "\xCE\xB1" "a"});  // α-ω; Ω is outside
  check_language("root ::= [^\"]\n", {"a", "\xC3\xA9", "\xF0\x9F\x98\x80", "\n"}, {"\"", "ab", "", "\xFF"});
  check_language("root ::= [\xF0\x9F\x98\x80-\xF0\x9F\x98\x8F]\n", {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x8F"},
                 {"\xF0\x9F\x98\x90", "a"});  // 😀-😏
  check_language("root ::= [a-cx-z_-]*\n", {"abc_-zy", ""}, {"d", "w"});
  check_language("root ::= [^a-z\xE4\xB8\x80-\xE9\xBE\xA5]\n", {"A", "\xC3\xA9", "\xEA\xB0\x80"},
                 {"q", "\xE4\xB8\xAD"});  // not lowercase ASCII nor CJK
}

TEST_CASE("gbnf: . is any one code point") {
  check_language("root ::= . \"!\"\n", {"a!", "\n!", "\xC3\xA9!", "\xF0\x9F\x98\x80!"}, {"!", "ab!", "\xFF!", "\xC3!"});
}

TEST_CASE("gbnf: repetition operators and bounds") {
  check_language("root ::= \"a\"{2}\n", {"aa"}, {"a", "aaa"});
  check_language("root ::= \"a\"{2,}\n", {"aa", "aaaaaaa"}, {"a", ""});
  check_language("root ::= \"a\"{2,4}\n", {"aa", "aaa", "aaaa"}, {"a", "aaaaa"});
  check_language("root ::= \"ab\"{0,2} \"c\"\n", {"c", "abc", "ababc"}, {"abababc", "ac"});
  check_language("root ::= [0-9]{ 1 , 3 } \".\"\n", {"1.", "123."}, {".", "1234."});
  check_language("root ::= \"x\"? \"y\"+ \"z\"*\n", {"y", "xyy", "yzzz"}, {"x", "xxy", "z"});
  check_language("root ::= (\"a\" | \"bc\")* \"!\"\n", {"!", "abca!", "bcbc!"}, {"b!", "ab"});
  check_language("root ::= \"ab\"+\n", {"ab", "abab"}, {"aab", "abb", ""});
  check_language("root ::= (\"a\" \"b\"?){3}\n", {"aaa", "ababab", "abaa"}, {"aa", "aba", "abababa"});
}

TEST_CASE("gbnf: repeating something that can match nothing (refused by llama.cpp, accepted here)") {
  check_language("root ::= (\"a\"?)* \"!\"\n", {"!", "a!", "aaaa!"}, {"b!", "a"});
  check_language("root ::= (\"a\" | \"\")+ \"!\"\n", {"!", "aaa!"}, {"b!"});
  check_language("root ::= \"a\"** \"!\"\n", {"!", "aa!"}, {"b!"});
  check_language("root ::= (x y)* \"!\"\nx ::= \"a\"?\ny ::= \"b\"*\n", {"!", "abba!", "bbb!", "aab!"}, {"ba!x"});
  check_language("root ::= (\"\")* \"!\"\n", {"!"}, {"a!"});
}

TEST_CASE("gbnf: layout: comments, line breaks after ::= and |, inside parentheses, CRLF") {
  check_language(R"g(
# leading comment

root ::= ( # a group may span lines
    "a"
  | "b" ) tail   # trailing comment
tail ::=
  "c" |
  "d"
)g",
                 {"ac", "bd"}, {"a", "cc"});
  check_language("root ::= \"a\" rule-2\r\nrule-2 ::= [0-9]\r\n", {"a7"}, {"a"});
  check_language("root ::= \"x\"\t|\t\"y\"", {"x", "y"}, {"xy"});  // no final newline
  check_language("root ::= \"\" | \"u\"\nempty ::=", {"", "u"}, {"uu"});  // empty alternative, empty rule
}

TEST_CASE("gbnf: rule names: letters, digits, dashes; forward references; last definition wins") {
  check_language("root ::= 2nd-rule\n2nd-rule ::= \"2\" | Rule-X\nRule-X ::= \"x\"\n", {"2", "x"}, {"y"});
  check_language("root ::= \"a\"\nroot ::= \"b\"\n", {"b"}, {"a"});
}

TEST_CASE("gbnf: recursion that consumes first is fine") {
  check_language("root ::= \"(\" root \")\" | \"\"\n", {"", "()", "((()))"}, {"(()", ")("});
  check_language("root ::= item (\",\" root)?\nitem ::= [a-z]\n", {"a", "a,b,c"}, {"a,", ",a"});
}

}  // namespace
}  // namespace sluice::grammar
