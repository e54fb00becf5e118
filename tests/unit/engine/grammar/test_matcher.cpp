// The token matcher against a brute-force reference on small hand-built grammars and a
// toy vocabulary: masks on every step, acceptance, EOS, termination, the mask cache,
// and two threads sharing one compiled grammar.
#include "engine/grammar/matcher.h"

#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "engine/grammar/grammar_builder.h"
#include "tests/unit/engine/grammar/matcher_test_util.h"

namespace sluice::grammar::unit_engine_grammar_test_matcher {
namespace {

using testing::brute_force_mask;
using testing::count_allowed;
using testing::Mask;
using testing::mask_of;

constexpr int32_t kEos = 0;
constexpr int32_t kControl = 1;  // a special token that is not EOS
constexpr int32_t kEmpty = 2;    // a non-special token with no bytes

// Tokens that cut across rule boundaries ("\":", "1}") and UTF-8 characters ("\xCE"
// is the first byte of α, "\xB1" its last; "\xCE\xB1\xCE" ends inside a second one).
const std::vector<std::string> kPieces = {
    "<eos>", "<ctl>", "", "a", "b", "c", "ab", "bc", "abc", "abcd", ",", "a,", ",b", "(", ")", "()", "((", "))",
    ")(", "x", "{", "}", "{}", "\"", "\":", ":", ":1", "1", "12", "1}", "k", "\"k", "ey", "key", "\xCE", "\xB1",
    "\xCE\xB1", "\xCE\xB1\xCE", "\xCF\x89", "\xE2\x82", "\xAC", "\xE2\x82\xAC", " ", "\\", "\\\"", "n", "\\n",
    "true", "tr", "ue", "[", "]", "[1", ",1", "-", ".5", "e3", "null", "<c", "tl>"};

int32_t id_of(const std::string& piece) {
  for (size_t i = 0; i < kPieces.size(); ++i)
    if (kPieces[i] == piece) return static_cast<int32_t>(i);
  FAIL("no toy token " << piece);
  return -1;
}

std::shared_ptr<const TokenTable> toy_tokens() {
  std::vector<bool> special(kPieces.size(), false);
  special[kEos] = special[kControl] = true;
  return std::make_shared<TokenTable>(kPieces, special, std::vector<int32_t>{kEos});
}

std::shared_ptr<CompiledGrammar> compile(Grammar g) { return CompiledGrammar::compile(std::move(g), toy_tokens()); }

Grammar literal_grammar(std::string_view text) {
  GrammarBuilder b;
  const uint32_t root = b.sequence(b.literal(text), "root");
  return std::move(b).build(root);
}

// item ::= "a"{1,3} | "b" ("c" | "") ; root ::= item ("," item){0,2}
Grammar list_grammar() {
  GrammarBuilder b;
  const uint32_t as = b.repeat(b.byte('a'), 1, 3, "as");
  const uint32_t optional_c = b.add_rule("optional-c");
  b.set_alternatives(optional_c, {{b.byte('c')}, {}});
  const uint32_t item = b.add_rule("item");
  b.set_alternatives(item, {{GrammarBuilder::ref(as)}, {b.byte('b'), GrammarBuilder::ref(optional_c)}});
  const uint32_t next = b.sequence({b.byte(','), GrammarBuilder::ref(item)}, "next");
  const uint32_t nexts = b.repeat(GrammarBuilder::ref(next), 0, 2, "nexts");
  const uint32_t root = b.sequence({GrammarBuilder::ref(item), GrammarBuilder::ref(nexts)}, "root");
  return std::move(b).build(root);
}

// s ::= "(" s ")" s | ""
Grammar parens_grammar() {
  GrammarBuilder b;
  const uint32_t s = b.add_rule("s");
  b.set_alternatives(s, {{b.byte('('), GrammarBuilder::ref(s), b.byte(')'), GrammarBuilder::ref(s)}, {}});
  return std::move(b).build(s);
}

// root ::= [α-ω]+ "€"?
Grammar greek_grammar() {
  GrammarBuilder b;
  const uint32_t greek = b.codepoints({{0x3B1, 0x3C9}}, false, "greek");
  const uint32_t letters = b.repeat(GrammarBuilder::ref(greek), 1, -1, "letters");
  const uint32_t euro = b.add_rule("euro");
  b.set_alternatives(euro, {b.literal("\xE2\x82\xAC"), {}});
  const uint32_t root = b.sequence({GrammarBuilder::ref(letters), GrammarBuilder::ref(euro)}, "root");
  return std::move(b).build(root);
}

// root ::= "{" [a-z]* "}"
Grammar braces_grammar() {
  GrammarBuilder b;
  ByteSet lower;
  for (int c = 'a'; c <= 'z'; ++c) lower.set(static_cast<size_t>(c));
  const uint32_t letters = b.repeat(b.bytes(lower), 0, -1, "letters");
  const uint32_t root = b.sequence({b.byte('{'), GrammarBuilder::ref(letters), b.byte('}')}, "root");
  return std::move(b).build(root);
}

// Compares fill_mask with the brute-force mask before every byte of `text` and at its
// end, where the whole text must be accepted.
void check_masks_along(const std::shared_ptr<CompiledGrammar>& g, std::string_view text) {
  CAPTURE(text);
  Matcher m(g);
  for (size_t i = 0; i <= text.size(); ++i) {
    CAPTURE(i);
    REQUIRE(mask_of(m) == brute_force_mask(m));
    if (i < text.size()) REQUIRE(m.accept_bytes(text.substr(i, 1)));
  }
  CHECK(m.is_complete());
}

bool accepts(const std::shared_ptr<CompiledGrammar>& g, std::string_view text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.is_complete();
}

TEST_CASE("grammar matcher: literal, choice, bounded repetition and nullable rules") {
  const auto lit = compile(literal_grammar("abc"));
  check_masks_along(lit, "abc");
  CHECK(accepts(lit, "abc"));
  CHECK_FALSE(accepts(lit, "ab"));
  CHECK_FALSE(accepts(lit, "abcd"));

  const auto list = compile(list_grammar());
  for (const char* text : {"a", "aaa", "b", "bc", "a,bc,aa", "bc,b", "aa,a,b"}) {
    check_masks_along(list, text);
    CHECK(accepts(list, text));
  }
  for (const char* text : {"aaaa", "a,b,a,a", "c", ",", "bcc", "a,"}) CHECK_FALSE(accepts(list, text));
}

TEST_CASE("grammar matcher: a recursive grammar (balanced parentheses)") {
  const auto g = compile(parens_grammar());
  for (const char* text : {"", "()", "(()())", "()()", "((()))()"}) {
    check_masks_along(g, text);
    CHECK(accepts(g, text));
  }
  for (const char* text : {"(", ")", "(()", "())", ")("}) CHECK_FALSE(accepts(g, text));
  Matcher m(g);
  REQUIRE(m.accept_token(id_of("((")));
  CHECK_FALSE(m.is_complete());
  CHECK(m.accept_token(id_of(")(")));
  CHECK_FALSE(m.is_complete());
  CHECK(m.accept_token(id_of(")")));
  CHECK_FALSE(m.is_complete());
  CHECK_FALSE(m.accept_token(kEos));
  CHECK(m.accept_token(id_of(")")));
  CHECK(m.is_complete());
  CHECK_FALSE(m.is_terminated());  // "()" may still follow
}

TEST_CASE("grammar matcher: code point classes and tokens that cut UTF-8 characters") {
  const auto g = compile(greek_grammar());
  for (const char* text : {"\xCE\xB1", "\xCE\xB1\xCF\x89\xE2\x82\xAC", "\xCF\x89\xCE\xB1\xCE\xB1"}) {
    check_masks_along(g, text);
    CHECK(accepts(g, text));
  }
  CHECK_FALSE(accepts(g, "\xCE"));                   // half a character
  CHECK_FALSE(accepts(g, "\xCE\xB1\xE2\x82\xAC\xCE\xB1"));  // nothing after the euro sign
  CHECK_FALSE(accepts(g, "\xCE\x91"));              // Α (capital alpha) is outside the class

  Matcher m(g);
  const Mask start = mask_of(m);
  CHECK(testing::allows(start, id_of("\xCE")));
  CHECK(testing::allows(start, id_of("\xCE\xB1\xCE")));
  CHECK_FALSE(testing::allows(start, id_of("\xB1")));
  REQUIRE(m.accept_token(id_of("\xCE\xB1\xCE")));
  const Mask inside = mask_of(m);  // only the last byte of a character may follow
  CHECK(testing::allows(inside, id_of("\xB1")));
  CHECK_FALSE(testing::allows(inside, id_of("\xCE\xB1")));
  CHECK_FALSE(testing::allows(inside, kEos));
  CHECK(inside == brute_force_mask(m));
}

TEST_CASE("grammar matcher: tokens that span rule boundaries in a JSON grammar") {
  const auto g = compile(testing::json_grammar());
  for (const char* text : {"{\"key\":12}", "[1,-1.5e3,true,null]", "{\"k\":\"\\n\\\"\xCE\xB1\"}", "{}", " [ ] ",
                           "{\"key\":{\"k\":[1,{}]}}"}) {
    check_masks_along(g, text);
    CHECK(accepts(g, text));
  }
  for (const char* text : {"{\"key\":}", "[1,]", "{key:1}", "\"\\x\"", "01", "tru"}) CHECK_FALSE(accepts(g, text));

  Matcher m(g);
  for (const char* piece : {"{", "\"k", "ey", "\":", "1", "}"}) REQUIRE(m.accept_token(id_of(piece)));
  CHECK(m.is_complete());
}

TEST_CASE("grammar matcher: EOS is allowed exactly when the grammar is complete") {
  const auto g = compile(literal_grammar("abc"));
  Matcher m(g);
  CHECK_FALSE(m.accept_token(kEos));
  REQUIRE(m.accept_token(id_of("ab")));
  const Mask one = mask_of(m);  // only "c" completes "abc"
  CHECK(count_allowed(one) == 1);
  CHECK(testing::allows(one, id_of("c")));
  CHECK_FALSE(m.is_complete());
  CHECK_FALSE(m.accept_token(kEos));
  REQUIRE(m.accept_token(id_of("c")));
  CHECK(m.is_complete());
  CHECK(m.is_terminated());
  const Mask end = mask_of(m);
  CHECK(count_allowed(end) == 1);
  CHECK(testing::allows(end, kEos));
  CHECK(m.accept_token(kEos));
  CHECK(m.is_finished());
  CHECK(count_allowed(mask_of(m)) == 0);
  CHECK_FALSE(m.accept_token(id_of("a")));
  CHECK_FALSE(m.accept_token(kEos));
  m.reset();
  CHECK_FALSE(m.is_finished());
  CHECK(m.accept_bytes("abc"));
}

TEST_CASE("grammar matcher: a grammar that only EOS can end") {
  GrammarBuilder b;
  ByteSet ab;
  ab.set('a');
  ab.set('b');
  const uint32_t root = b.repeat(b.bytes(ab), 0, -1, "root");
  const auto g = compile(std::move(b).build(root));
  Matcher m(g);
  for (const char* piece : {"a", "bc", "ab", "b", "abcd"}) {
    CHECK(m.is_complete());
    CHECK_FALSE(m.is_terminated());
    const Mask mask = mask_of(m);
    CHECK(testing::allows(mask, kEos));
    CHECK(mask == brute_force_mask(m));
    m.accept_token(id_of(piece));  // "bc" and "abcd" are refused
  }
  CHECK(m.accept_token(kEos));
  CHECK(m.is_finished());
}

TEST_CASE("grammar matcher: EOS is forbidden until the closing brace") {
  const auto g = compile(braces_grammar());
  Matcher m(g);
  for (const char* piece : {"{", "a", "bc", "key", "}"}) {
    CHECK_FALSE(testing::allows(mask_of(m), kEos));
    CHECK_FALSE(m.accept_token(kEos));
    REQUIRE(m.accept_token(id_of(piece)));
  }
  CHECK(m.is_terminated());
  const Mask end = mask_of(m);
  CHECK(count_allowed(end) == 1);
  CHECK(testing::allows(end, kEos));
  check_masks_along(g, "{abc}");
  check_masks_along(g, "{}");
}

TEST_CASE("grammar matcher: control and empty tokens are never allowed") {
  const auto g = compile(literal_grammar("<ctl>"));
  Matcher m(g);
  const Mask start = mask_of(m);
  CHECK_FALSE(testing::allows(start, kControl));  // its bytes match, but it is a control token
  CHECK_FALSE(testing::allows(start, kEmpty));
  CHECK(testing::allows(start, id_of("<c")));
  CHECK_FALSE(m.accept_token(kControl));
  CHECK_FALSE(m.accept_token(kEmpty));
  CHECK_FALSE(m.accept_token(-1));
  CHECK_FALSE(m.accept_token(static_cast<int32_t>(kPieces.size())));
  CHECK(m.accept_token(id_of("<c")));
  CHECK(m.accept_token(id_of("tl>")));
  CHECK(m.is_terminated());
}

TEST_CASE("grammar matcher: a refused token or byte string changes nothing") {
  const auto g = compile(literal_grammar("abc"));
  Matcher m(g);
  CHECK_FALSE(m.accept_bytes("abx"));
  CHECK_FALSE(m.accept_token(id_of("abcd")));
  CHECK(m.accept_bytes(""));
  const Mask before = mask_of(m);
  CHECK(m.accept_bytes("abc"));
  CHECK(m.is_terminated());
  m.reset();
  CHECK(mask_of(m) == before);
}

std::vector<std::string> json_documents() {
  return {"{\"key\":12}", "[1,-1.5e3,true,null]", "{\"k\":\"\\n\\\"\xCE\xB1\"}", "{\"key\":{\"k\":[1,{}]}}",
          " [ ] ", "{\"k\":\"ab c\",\"key\":[true,null,{\"k\":-12.5}]}"};
}

// Every mask of every document, stepped byte by byte.
std::vector<Mask> masks_of_documents(const std::shared_ptr<CompiledGrammar>& g) {
  std::vector<Mask> out;
  for (const std::string& doc : json_documents()) {
    Matcher m(g);
    for (char c : doc) {
      out.push_back(mask_of(m));
      if (!m.accept_bytes(std::string_view(&c, 1))) return {};
    }
    out.push_back(mask_of(m));
  }
  return out;
}

TEST_CASE("grammar matcher: the mask cache returns the masks it was given") {
  const auto g = compile(testing::json_grammar());
  const std::vector<Mask> first = masks_of_documents(g);
  REQUIRE_FALSE(first.empty());
  const MatcherStats after_first = g->stats();
  CHECK(after_first.masks_computed > 0);
  CHECK(after_first.masks_computed + after_first.masks_from_cache == first.size());

  const std::vector<Mask> second = masks_of_documents(g);
  const MatcherStats after_second = g->stats();
  CHECK(second == first);
  CHECK(after_second.masks_computed == after_first.masks_computed);  // every state was met before
  CHECK(after_second.masks_from_cache == after_first.masks_from_cache + second.size());
}

TEST_CASE("grammar matcher: two threads sharing a compiled grammar see one thread's masks") {
  const std::vector<Mask> expected = masks_of_documents(compile(testing::json_grammar()));
  REQUIRE_FALSE(expected.empty());
  const auto shared = compile(testing::json_grammar());
  std::vector<Mask> got[2];
  std::thread a([&] { got[0] = masks_of_documents(shared); });
  std::thread b([&] { got[1] = masks_of_documents(shared); });
  a.join();
  b.join();
  CHECK(got[0] == expected);
  CHECK(got[1] == expected);
}

}  // namespace
}  // namespace sluice::grammar
