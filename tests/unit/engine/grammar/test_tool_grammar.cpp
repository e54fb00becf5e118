// The tool-call grammar (engine/grammar/tool_grammar.h), run by the matcher over a
// byte-level vocabulary: hermes-shaped calls, parallel calls, the reasoning span,
// text_without against brute force, graft, and refused schemas.
#include <doctest/doctest.h>

#include <functional>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar/tool_grammar.h"
#include "tests/unit/engine/grammar/matcher_test_util.h"

namespace sluice::grammar::unit_engine_grammar_test_tool_grammar {
namespace {

constexpr int32_t kEos = 256;

// 256 one-byte tokens and an EOS: the matcher judges raw bytes.
std::shared_ptr<const TokenTable> byte_table() {
  static const auto table = [] {
    std::vector<std::string> bytes(257);
    std::vector<bool> special(257, false);
    for (int b = 0; b < 256; ++b) bytes[static_cast<size_t>(b)] = std::string(1, static_cast<char>(b));
    special[kEos] = true;
    return std::make_shared<const TokenTable>(std::move(bytes), std::move(special), std::vector<int32_t>{kEos});
  }();
  return table;
}

std::shared_ptr<CompiledGrammar> compiled(Grammar grammar) {
  return CompiledGrammar::compile(std::move(grammar), byte_table());
}

// The whole of `text` is a match, and the generation may end there.
bool accepts(const std::shared_ptr<CompiledGrammar>& g, std::string_view text) {
  Matcher m(g);
  return m.accept_bytes(text) && m.is_complete() && m.accept_token(kEos) && m.is_finished();
}

const std::vector<ToolFunctionSchema> kFunctions = {
    {"get_weather",
     R"({"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},)"
     R"("required":["city","unit"],"additionalProperties":false})",
     true},
    {"add", R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]})",
     false},
};

ToolGrammarOptions hermes(bool parallel = true) {
  ToolGrammarOptions o;
  o.before_name = "<tool_call>\n{\"name\": \"";
  o.between = "\", \"arguments\": ";
  o.after_arguments = "}\n</tool_call>";
  o.separator = "\n";
  o.parallel = parallel;
  return o;
}

std::string call(std::string_view name, std::string_view arguments) {
  return "<tool_call>\n{\"name\": \"" + std::string(name) + "\", \"arguments\": " + std::string(arguments) +
         "}\n</tool_call>";
}

const std::string kWeather = call("get_weather", R"({"city":"Paris","unit":"c"})");
const std::string kAdd = call("add", R"({"a":1,"b":-2})");

std::shared_ptr<CompiledGrammar> tool_grammar(const ToolGrammarOptions& options,
                                              const std::vector<ToolFunctionSchema>& functions = kFunctions) {
  return compiled(tool_call_grammar(functions, options).grammar);
}

// The function index and schema path of the ToolSchemaError that building throws.
std::pair<size_t, std::string> refusal(const std::vector<ToolFunctionSchema>& functions) {
  try {
    tool_call_grammar(functions, hermes());
  } catch (const ToolSchemaError& e) {
    return {e.function_index(), e.schema_where()};
  }
  return {size_t(-1), "(compiled)"};
}

// Every string over `alphabet` up to `max_length` bytes, depth first: at each one the
// matcher (fed byte by byte) agrees with `expected`, and a rejected byte means no
// extension is expected either (the callers' languages are closed under prefixes of
// rejected strings: once the word is in, it stays in).
int check_all_strings(const std::shared_ptr<CompiledGrammar>& g, std::string_view alphabet, size_t max_length,
                      const std::function<bool(const std::string&)>& expected) {
  int checked = 0;
  std::function<void(const std::string&, const Matcher&)> visit = [&](const std::string& s, const Matcher& m) {
    INFO("string: " << s);
    CHECK(m.is_complete() == expected(s));
    ++checked;
    if (s.size() == max_length) return;
    for (char c : alphabet) {
      Matcher next = m;
      const std::string t = s + c;
      if (next.accept_bytes(std::string(1, c))) {
        visit(t, next);
      } else {
        INFO("rejected: " << t);
        CHECK_FALSE(expected(t));
      }
    }
  };
  visit("", Matcher(g));
  return checked;
}

}  // namespace

TEST_CASE("tool grammar: hermes calls of two functions, one call") {
  const auto g = tool_grammar(hermes(false));
  CHECK(accepts(g, kWeather));
  CHECK(accepts(g, kAdd));
  CHECK(accepts(g, call("get_weather", R"({"city":"","unit":"f"})")));
  CHECK(accepts(g, " \n\t\r" + kAdd));  // leading whitespace
  CHECK_FALSE(accepts(g, call("add", R"({"a":1,"b":2,"c":[true]})")));  // add lists a and b: closed

  CHECK_FALSE(accepts(g, call("get_wether", R"({"city":"Paris","unit":"c"})")));  // no such function
  CHECK_FALSE(accepts(g, call("add", R"({"city":"Paris","unit":"c"})")));        // another's arguments
  CHECK_FALSE(accepts(g, call("get_weather", R"({"city":"Paris","unit":"k"})")));  // not in the enum
  CHECK_FALSE(accepts(g, call("get_weather", R"({"city":"Paris"})")));             // a required property missing
  CHECK_FALSE(accepts(g, call("get_weather", R"({"city":"Paris","unit":"c","x":1})")));  // no additional ones
  CHECK_FALSE(accepts(g, call("add", R"({"a":1.5,"b":2})")));                       // not an integer
  CHECK_FALSE(accepts(g, call("add", R"({"a": 1,"b":2})")));                        // compact JSON only
  CHECK_FALSE(accepts(g, call("add", R"([1,2])")));
  CHECK_FALSE(accepts(g, kAdd.substr(0, kAdd.size() - 1)));         // closing markup cut short
  CHECK_FALSE(accepts(g, kAdd.substr(0, kAdd.find("}\n</tool"))));  // no closing markup at all
  CHECK_FALSE(accepts(g, kAdd + "\n" + kWeather));                   // a second call
  CHECK_FALSE(accepts(g, kAdd + "\n"));
  CHECK_FALSE(accepts(g, ""));
  CHECK_FALSE(accepts(g, "Sure! " + kAdd));  // no text before the call

  ToolGrammarOptions tight = hermes(false);
  tight.leading_whitespace = false;
  const auto t = tool_grammar(tight);
  CHECK(accepts(t, kAdd));
  CHECK_FALSE(accepts(t, "\n" + kAdd));
}

TEST_CASE("tool grammar: parallel calls are separated by the separator") {
  const auto g = tool_grammar(hermes(true));
  CHECK(accepts(g, kWeather));
  CHECK(accepts(g, kWeather + "\n" + kAdd));
  CHECK(accepts(g, kAdd + "\n" + kWeather + "\n" + kAdd));
  CHECK_FALSE(accepts(g, kWeather + kAdd));          // no separator
  CHECK_FALSE(accepts(g, kWeather + "\n\n" + kAdd));  // the separator exactly
  CHECK_FALSE(accepts(g, kWeather + "\n"));          // a separator with no call after it
  CHECK_FALSE(accepts(g, kWeather + "\n" + call("sub", R"({"a":1,"b":2})")));
}

TEST_CASE("tool grammar: a reasoning span may come first") {
  ToolGrammarOptions options = hermes(false);
  options.reasoning_open = "<think>";
  options.reasoning_close = "</think>";
  const auto g = tool_grammar(options);
  CHECK(accepts(g, "<think>\nhmm </thin k>\n</think>\n\n" + kAdd));
  CHECK(accepts(g, "\n<think></think>" + kAdd));
  CHECK(accepts(g, "<think>a < b </ </t </th </thi </thin </think </think\n</think>" + kAdd));
  CHECK(accepts(g, kAdd));  // the span is optional
  CHECK_FALSE(accepts(g, "<think>a</think>b</think>\n" + kAdd));  // the close twice
  CHECK_FALSE(accepts(g, "<think><</think>b</think>\n" + kAdd));  // the first close after a '<'
  CHECK_FALSE(accepts(g, "<think>hmm\n" + kAdd));                 // never closed
  CHECK_FALSE(accepts(g, "<think>a</think>\n<think>b</think>\n" + kAdd));
  CHECK_FALSE(accepts(g, "hmm</think>\n" + kAdd));  // not opened

  options.starts_in_reasoning = true;
  const auto inside = tool_grammar(options);
  CHECK(accepts(inside, "hmm </thin k>\n</think>\n\n" + kAdd));
  CHECK(accepts(inside, "</think>" + kAdd));
  CHECK_FALSE(accepts(inside, kAdd));  // the span the prompt opened must be closed
  CHECK_FALSE(accepts(inside, "<think>a</think>b</think>" + kAdd));
  CHECK_FALSE(accepts(inside, "a</think>b</think>" + kAdd));
}

TEST_CASE("tool grammar: a self-overlapping closing word ends the span where it first occurs") {
  for (const std::string close : {"aab", "abab"}) {
    ToolGrammarOptions options;
    options.before_name = "(";
    options.between = ":";
    options.after_arguments = ")";
    options.parallel = false;
    options.reasoning_open = "<";
    options.reasoning_close = close;
    options.starts_in_reasoning = true;
    const auto g = tool_grammar(options, {{"f", "", false}});
    const std::string tail = "(f:{})";
    // Reasoning s over {a, b}: accepted exactly when close first occurs at its end.
    int checked = 0;
    std::function<void(const std::string&)> visit = [&](const std::string& s) {
      const size_t first = s.find(close);
      INFO("close " << close << ", reasoning " << s);
      CHECK(accepts(g, s + tail) == (first != std::string::npos && first + close.size() == s.size()));
      ++checked;
      if (s.size() < 8)
        for (char c : std::string("ab")) visit(s + c);
    };
    visit("");
    CHECK(checked == 511);
  }
}

TEST_CASE("tool grammar: text_without matches exactly the strings without the word") {
  struct Case {
    std::string word, alphabet;
  };
  for (const Case& c : {Case{"</th>", "</th>x"}, Case{"aab", "ab"}, Case{"abab", "ab"}, Case{"aaa", "ab"},
                        Case{"x", "xy"}}) {
    GrammarBuilder b;
    const uint32_t rule = text_without(b, c.word, "without");
    const auto g = compiled(std::move(b).build(rule));
    const int checked = check_all_strings(g, c.alphabet, 6, [&](const std::string& s) {
      return s.find(c.word) == std::string::npos;
    });
    // Every string without the word was reached (the live ones are exactly those).
    int without = 0;
    std::function<void(const std::string&)> count = [&](const std::string& s) {
      without += s.find(c.word) == std::string::npos;
      if (s.size() < 6)
        for (char a : c.alphabet) count(s + a);
    };
    count("");
    INFO("word " << c.word);
    CHECK(checked == without);
  }
  GrammarBuilder b;
  CHECK_THROWS_AS(text_without(b, "", "empty"), GrammarError);
}

TEST_CASE("tool grammar: graft copies a grammar under new names and indices") {
  GrammarBuilder b;
  // Rules and byte sets before the graft, under names the JSON grammar uses too.
  const uint32_t value = b.sequence(b.literal("#"), "value");
  const uint32_t json = graft(b, testing::json_grammar(), "g-");
  for (size_t r = 1; r < b.num_rules(); ++r) CHECK(b.rule(static_cast<uint32_t>(r)).name.rfind("g-", 0) == 0);
  CHECK(b.rule(json).name == "g-root");
  const uint32_t root =
      b.sequence({GrammarBuilder::ref(value), b.byte('['), GrammarBuilder::ref(json), b.byte(']')}, "top");
  const auto g = compiled(std::move(b).build(root));
  CHECK(accepts(g, R"(#[{"a": [1, 2.5e3, "x\n"], "b": {}}])"));
  CHECK(accepts(g, "#[ null ]"));
  CHECK_FALSE(accepts(g, R"(#[{"a":}])"));
  CHECK_FALSE(accepts(g, R"([{"a":1}])"));
  CHECK_FALSE(accepts(g, R"(#[{"a":1})"));
}

TEST_CASE("tool grammar: parameters without a type are any object") {
  for (const std::string parameters : {"", "  ", "{}", "true", R"({"description":"none"})"}) {
    INFO("parameters " << parameters);
    const auto g = tool_grammar(hermes(false), {{"f", parameters, true}});
    CHECK(accepts(g, call("f", "{}")));
    CHECK(accepts(g, call("f", R"({"x":[1,{"y":null}]})")));
    CHECK_FALSE(accepts(g, call("f", "[]")));
    CHECK_FALSE(accepts(g, call("f", R"("s")")));
    CHECK_FALSE(accepts(g, call("f", "1")));
  }
  const auto g = tool_grammar(hermes(false), {{"f", R"({"properties":{"x":{"type":"integer"}},"required":["x"]})"}});
  CHECK(accepts(g, call("f", R"({"x":3})")));
  CHECK_FALSE(accepts(g, call("f", R"({"x":"3"})")));
  CHECK_FALSE(accepts(g, call("f", "3")));
}

TEST_CASE("tool grammar: refused schemas name the function and the schema path") {
  const ToolFunctionSchema ok{"ok", R"({"type":"object"})", true};
  CHECK(refusal({ok, {"bad", R"({"type":5})", false}}) == std::pair<size_t, std::string>{1, "/type"});
  CHECK(refusal({{"bad", R"({"properties":{"x":{"type":5}}})", false}, ok}) ==
        std::pair<size_t, std::string>{0, "/properties/x/type"});  // the inserted type moves no path
  const std::string uri = R"({"type":"object","properties":{"u":{"type":"string","format":"uri"}}})";
  CHECK(refusal({ok, ok, {"fetch", uri, true}}) == std::pair<size_t, std::string>{2, "/properties/u/format"});
  CHECK(refusal({{"s", R"({"type":"string"})", false}}) == std::pair<size_t, std::string>{0, "/type"});
  CHECK(refusal({{"s", R"({"type":["object","null"]})", false}}) == std::pair<size_t, std::string>{0, "/type"});
  CHECK(refusal({{"s", R"({"type":)", false}}).first == 0);  // not JSON

  // Not strict: the same keyword is listed, prefixed with the function's name.
  const auto result = tool_call_grammar({ok, {"fetch", uri, false}}, hermes());
  REQUIRE(result.unenforced.size() == 1);
  CHECK(result.unenforced[0].rfind("fetch: /properties/u/format: ", 0) == 0);
  const auto g = compiled(result.grammar);
  CHECK(accepts(g, call("fetch", R"({"u":"anything"})")));

  CHECK_THROWS_AS(tool_call_grammar({}, hermes()), GrammarError);
  CHECK_THROWS_AS(tool_call_grammar({{"bad name", "", false}}, hermes()), GrammarError);
  GrammarLimits small;
  small.max_elements = 200;
  CHECK_THROWS_AS(tool_call_grammar(kFunctions, hermes(), small), GrammarError);
}

}  // namespace sluice::grammar

namespace sluice::grammar::unit_engine_grammar_test_tool_grammar {

TEST_CASE("tool grammar: arguments hold only the listed properties unless the schema allows others") {
  // "add" lists a and b and says nothing of additionalProperties: closed, as in xgrammar's strict mode.
  const auto g = tool_grammar(hermes(false));
  CHECK(accepts(g, call("add", R"({"a":1,"b":2})")));
  CHECK_FALSE(accepts(g, call("add", R"({"a":1,"b":2,"c":3})")));
  CHECK_FALSE(accepts(g, call("add", R"({"a":1,"z":0,"b":2})")));
  // A schema that allows other names keeps them.
  const auto open = tool_grammar(hermes(false), {{"f", R"({"properties":{"a":{"type":"integer"}},"additionalProperties":true})"}});
  CHECK(accepts(open, call("f", R"({"a":1,"b":2})")));
}

}  // namespace sluice::grammar

namespace sluice::grammar::unit_engine_grammar_test_tool_grammar {
namespace {

// The generic envelope as chat::tool_call_shape(ToolCallSyntax::generic) spells it.
ToolGrammarOptions envelope(bool parallel, bool response) {
  ToolGrammarOptions o;
  o.before_name = "{\"name\": \"";
  o.between = "\", \"arguments\": ";
  o.after_arguments = "}";
  o.separator = ", ";
  o.parallel = parallel;
  o.leading_whitespace = false;
  o.calls_open = "{\"tool_calls\": [";
  o.calls_close = "]}";
  if (response) {
    o.response_open = "{\"response\": ";
    o.response_close = "}";
  }
  return o;
}

std::string generic_call(std::string_view name, std::string_view arguments) {
  return "{\"name\": \"" + std::string(name) + "\", \"arguments\": " + std::string(arguments) + "}";
}

std::string calls(const std::vector<std::string>& items) {
  std::string out = "{\"tool_calls\": [";
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : ", ") + items[i];
  return out + "]}";
}

const std::string kGenericWeather = generic_call("get_weather", R"({"city":"Paris","unit":"c"})");
const std::string kGenericAdd = generic_call("add", R"({"a":1,"b":-2})");

}  // namespace

TEST_CASE("tool grammar: the generic envelope holds calls or a text response (tool_choice auto)") {
  const auto g = tool_grammar(envelope(true, true));
  CHECK(accepts(g, calls({kGenericWeather})));
  CHECK(accepts(g, calls({kGenericWeather, kGenericAdd, kGenericWeather})));
  CHECK(accepts(g, R"({"response": "Hello!"})"));
  CHECK(accepts(g, R"({"response": ""})"));
  CHECK(accepts(g, R"({"response": "say \"hi\"\n caf\u00e9 \ud83d\ude00 \\ done"})"));
  CHECK(accepts(g, "{\"response\": \"Gr\xC3\xBC\xC3\x9F\x65 \xF0\x9F\x98\x80\"}"));  // raw UTF-8
  CHECK_FALSE(accepts(g, "{\"response\": \"a\nb\"}"));  // a raw control character is not JSON
  CHECK_FALSE(accepts(g, R"({"response": "unterminated})"));
  CHECK_FALSE(accepts(g, R"({"response": 42})"));  // a string, unless response_format says otherwise
  CHECK_FALSE(accepts(g, R"({"response": "a", "tool_calls": []})"));
  CHECK_FALSE(accepts(g, R"({"tool_calls": []})"));  // at least one call
  CHECK_FALSE(accepts(g, " " + calls({kGenericWeather})));  // from the first byte
  CHECK_FALSE(accepts(g, calls({kGenericWeather}) + "\n"));
  CHECK_FALSE(accepts(g, "Sure: " + calls({kGenericWeather})));
  CHECK_FALSE(accepts(g, calls({generic_call("get_wether", R"({"city":"Paris","unit":"c"})")})));
  CHECK_FALSE(accepts(g, calls({generic_call("add", R"({"a":1,"b":2,"c":3})")})));  // closed object
  CHECK_FALSE(accepts(g, calls({generic_call("get_weather", R"({"city":"Paris","unit":"k"})")})));
  CHECK_FALSE(accepts(g, "{\"tool_calls\": [" + kGenericWeather + "," + kGenericAdd + "]}"));  // ", " exactly
  CHECK_FALSE(accepts(g, kGenericWeather));  // a bare call is not the envelope
}

TEST_CASE("tool grammar: the generic envelope under required, a named function and parallel false") {
  const auto required = tool_grammar(envelope(true, false));
  CHECK(accepts(required, calls({kGenericAdd, kGenericWeather})));
  CHECK_FALSE(accepts(required, R"({"response": "Hello!"})"));  // a call is required

  const auto one = tool_grammar(envelope(false, true));
  CHECK(accepts(one, calls({kGenericAdd})));
  CHECK(accepts(one, R"({"response": "x"})"));
  CHECK_FALSE(accepts(one, calls({kGenericAdd, kGenericWeather})));

  const std::vector<ToolFunctionSchema> named = {kFunctions[1]};
  const auto add_only = tool_grammar(envelope(false, false), named);
  CHECK(accepts(add_only, calls({kGenericAdd})));
  CHECK_FALSE(accepts(add_only, calls({kGenericWeather})));
  CHECK_FALSE(accepts(add_only, calls({kGenericAdd, kGenericAdd})));
}

TEST_CASE("tool grammar: a JSON response_format holds the generic envelope's response") {
  ToolGrammarOptions options = envelope(true, true);
  GrammarSpec schema;
  schema.kind = GrammarSpec::Kind::json_schema;
  schema.text = R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})";
  options.response_spec = schema;
  const auto g = tool_grammar(options);
  CHECK(accepts(g, R"({"response": {"n":3}})"));
  CHECK(accepts(g, calls({kGenericAdd})));  // calls stay allowed
  CHECK_FALSE(accepts(g, R"({"response": "text"})"));
  CHECK_FALSE(accepts(g, R"({"response": {"n":"3"}})"));

  options.response_spec = GrammarSpec{};  // json_object
  const auto object = tool_grammar(options);
  CHECK(accepts(object, R"({"response": {"any":[1,{"x":null}]}})"));
  CHECK_FALSE(accepts(object, R"({"response": [1]})"));

  GrammarSpec regex;
  regex.kind = GrammarSpec::Kind::regex;
  regex.text = "a+";
  options.response_spec = regex;
  CHECK_THROWS_AS(tool_call_grammar(kFunctions, options), ResponseSchemaError);
  schema.text = R"({"type":"object","properties":{"n":{"type":5}}})";
  options.response_spec = schema;
  CHECK_THROWS_AS(tool_call_grammar(kFunctions, options), ResponseSchemaError);
}

}  // namespace sluice::grammar
