// JSON Schema -> grammar: cases checked against Python's jsonschema (the fixture
// tests/fixtures/grammar/json_schema_cases.json, see make_json_schema_cases.py), and
// what the oracle cannot say: canonical forms (integers, property order), whitespace,
// exhaustive integer ranges, refusals with their schema path, and every limit.
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/grammar/json_schema.h"
#include "tests/unit/engine/grammar/schema_recognizer.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::grammar::unit_engine_grammar_test_json_schema {
namespace {

using testing::schema_accepts;

Grammar compile(const std::string& schema, bool any_whitespace = false) {
  JsonSchemaOptions options;
  options.any_whitespace = any_whitespace;
  return compile_json_schema(schema, options).grammar;
}

// The schema path of the GrammarError that compiling `schema` (strict) throws.
std::string refusal(const std::string& schema, JsonSchemaOptions options = {}) {
  try {
    compile_json_schema(schema, options);
  } catch (const GrammarError& e) {
    return e.where();
  }
  return "(compiled)";
}

bool regex_front_end_built() {
  try {
    compile_json_schema(R"({"type":"string","pattern":"a"})");
    return true;
  } catch (const GrammarError& e) {
    return std::string(e.what()).find("regex front end is not built") == std::string::npos;
  }
}

}  // namespace

TEST_CASE("json schema: cases agree with Python's jsonschema") {
  std::ifstream in(std::string(SLUICE_FIXTURES_DIR) + "/grammar/json_schema_cases.json");
  REQUIRE(in.good());
  const auto cases = nlohmann::ordered_json::parse(in);  // properties keep their order
  const bool have_regex = regex_front_end_built();
  int checked = 0;
  for (const auto& c : cases) {
    if (c.at("needs_regex").get<bool>() && !have_regex) {
      MESSAGE("skipped until the regex front end is merged: " << c.at("name").get<std::string>());
      continue;
    }
    INFO(c.at("name").get<std::string>());
    Grammar grammar;
    REQUIRE_NOTHROW(grammar = compile(c.at("schema").dump()));
    for (const auto& instance : c.at("instances")) {
      const std::string text = instance.at("text").get<std::string>();
      INFO(text);
      CHECK(schema_accepts(grammar, text) == instance.at("valid").get<bool>());
      ++checked;
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("json schema: integer ranges, every integer in [-200, 200]") {
  struct Range {
    std::string schema;
    long lo, hi;
  };
  const std::vector<Range> ranges = {
      {R"({"type":"integer","minimum":-17,"maximum":123})", -17, 123},
      {R"({"type":"integer","exclusiveMinimum":-100,"exclusiveMaximum":-3})", -99, -4},
      {R"({"type":"integer","minimum":0})", 0, 1000},
      {R"({"type":"integer","maximum":-1})", -1000, -1},
      {R"({"type":"integer","minimum":7,"maximum":7})", 7, 7},
      {R"({"type":"integer","minimum":1.5,"maximum":99.5})", 2, 99},
      {R"({"type":"integer","minimum":-50,"exclusiveMinimum":true,"maximum":50,"exclusiveMaximum":true})", -49, 49},
      {R"({"type":"integer","minimum":10,"maximum":100000})", 10, 100000},
      {R"({"type":"integer","minimum":-199,"maximum":0})", -199, 0},
      {R"({"type":"integer"})", -1000, 1000},
  };
  for (const Range& r : ranges) {
    INFO(r.schema);
    const Grammar g = compile(r.schema);
    for (long i = -200; i <= 200; ++i) {
      INFO(i);
      CHECK(schema_accepts(g, std::to_string(i)) == (i >= r.lo && i <= r.hi));
    }
  }
  // Canonical integers only: no fraction, exponent, leading zero or "-0".
  const Grammar any = compile(R"({"type":"integer"})");
  for (const char* text : {"1.0", "1e2", "01", "-0", "+1", "-", ""}) CHECK_FALSE(schema_accepts(any, text));
  const Grammar big = compile(R"({"type":"integer","minimum":9007199254740993})");
  CHECK(schema_accepts(big, "9007199254740993"));
  CHECK(schema_accepts(big, "123456789012345678901234567890"));
  CHECK_FALSE(schema_accepts(big, "9007199254740992"));
  CHECK(refusal(R"({"type":"integer","minimum":10,"maximum":9})") == "/minimum");
}

TEST_CASE("json schema: optional properties keep schema order; every subset, nothing else") {
  const Grammar g = compile(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"},
      "c":{"type":"integer"},"d":{"type":"integer"}},"additionalProperties":false})");
  const std::string names = "abcd";
  for (int mask = 0; mask < 16; ++mask) {
    std::string text = "{";
    for (int i = 0; i < 4; ++i)
      if (mask & (1 << i)) text += std::string(text.size() > 1 ? "," : "") + "\"" + names[i] + "\":" + std::to_string(i);
    text += "}";
    INFO(text);
    CHECK(schema_accepts(g, text));
  }
  for (const char* text : {R"({"b":1,"a":0})", R"({"a":0,"d":3,"c":2})", R"({"a":0,"a":0})", R"({"e":1})",
                           R"({,"a":0})", R"({"a":0,})", R"({"a":0 ,"b":1})"})
    CHECK_FALSE(schema_accepts(g, text));
  // Required ones must appear; with additionalProperties true, other names may come
  // between listed ones, but a listed name only in its place.
  const Grammar open = compile(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
      "required":["b"],"additionalProperties":true})");
  for (const char* text : {R"({"b":1})", R"({"a":1,"b":2})", R"({"x":1,"a":1,"y":[],"b":2,"z":{}})", R"({"ab":1,"b":2})",
                           R"({"":1,"b":2})", R"({"\u00e9":1,"b":2})"})
    CHECK(schema_accepts(open, text));
  for (const char* text : {R"({"a":1})", R"({"b":2,"a":1})", R"({})", R"({"a":"x","b":2})", R"({"b":1,"b":2})"})
    CHECK_FALSE(schema_accepts(open, text));
}

TEST_CASE("json schema: an object that lists properties is closed unless it says otherwise") {
  // A pydantic model's schema: no additionalProperties. instructor's Mode.JSON_SCHEMA got
  // {"{{Italy}}":111,"":111,...} from an open object: names never listed, repeated.
  const char* listed = R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},
      "required":["name","age"]})";
  const Grammar closed = compile(listed);
  CHECK(schema_accepts(closed, R"({"name":"Rome","age":3})"));
  for (const char* text : {R"({"name":"Rome","x":1,"age":3})", R"({"":111,"name":"Rome","age":3})",
                           R"({"name":"Rome","age":3,"age":3})", R"({"name":"Rome","name":"Rome","age":3})"})
    CHECK_FALSE(schema_accepts(closed, text));
  // Nested objects too; a schema given for other names, or true, opens the object.
  const Grammar nested = compile(R"({"type":"object","properties":{"p":{"type":"object","properties":{"q":{"type":"integer"}}}}})");
  CHECK(schema_accepts(nested, R"({"p":{"q":1}})"));
  CHECK_FALSE(schema_accepts(nested, R"({"p":{"q":1,"r":2}})"));
  const Grammar typed = compile(R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
  CHECK(schema_accepts(typed, R"({"a":1,"b":"x"})"));
  CHECK_FALSE(schema_accepts(typed, R"({"a":1,"b":2})"));
  // An object that lists nothing is any object (OpenAI's json_object), and the option
  // gives JSON Schema's own default back.
  CHECK(schema_accepts(compile(R"({"type":"object"})"), R"({"x":1,"y":{"z":[]}})"));
  JsonSchemaOptions open;
  open.closed_objects = false;
  CHECK(schema_accepts(compile_json_schema(listed, open).grammar, R"({"name":"Rome","x":1,"age":3})"));
}

TEST_CASE("json schema: recursion is unrolled to max_recursive_nesting levels of objects and arrays") {
  // A tree of nodes with up to two children each, as pydantic writes it.
  const std::string tree = R"({"$defs":{"Node":{"type":"object","properties":{"name":{"type":"string"},
      "children":{"type":"array","items":{"$ref":"#/$defs/Node"},"maxItems":2}},"required":["name","children"]}},
      "$ref":"#/$defs/Node"})";
  // A chain of n nodes, each the only child of the one before: 2n - 1 levels deep.
  const auto chain = [](int n) {
    std::string text;
    for (int i = 0; i < n; ++i) text += R"({"name":"n","children":[)";
    for (int i = 0; i < n; ++i) text += "]}";
    return text;
  };
  for (int cap : {1, 2, 3, 10}) {
    INFO("cap ", cap);
    JsonSchemaOptions options;
    options.limits.max_recursive_nesting = cap;
    const Grammar g = compile_json_schema(tree, options).grammar;
    // n nodes make 2n containers (an object and its array each): at most `cap` of
    // them, except that the first node is always there.
    int deepest = 0;
    for (int n = 1; n <= 12; ++n)
      if (schema_accepts(g, chain(n))) deepest = n;
    CHECK(deepest == std::max(1, cap / 2));
  }
  // Direct recursion through an optional property, and the default cap of 10.
  const Grammar linked = compile(R"({"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}},"required":["v"]})");
  std::string list = R"({"v":0})";
  for (int depth = 1; depth < 10; ++depth) list = R"({"v":0,"next":)" + list + "}";
  CHECK(schema_accepts(linked, list));  // 10 objects deep
  CHECK_FALSE(schema_accepts(linked, R"({"v":0,"next":)" + list + "}"));
  // A recursion that must go on is refused, naming the limit.
  try {
    compile(R"({"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]})");
    FAIL("compiled");
  } catch (const GrammarError& e) {
    CHECK(std::string(e.what()).find("max_recursive_nesting") != std::string::npos);
  }
}

TEST_CASE("json schema: strings, escapes and lengths in characters") {
  const Grammar any = compile(R"({"type":"string"})");
  for (const char* text : {R"("")", R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u00e9\uD83D\uDE00")", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""})
    CHECK(schema_accepts(any, text));
  for (const char* text : {"\"a\nb\"", R"("\x")", R"("\u12")", R"("\ud800")", R"("\udc00\ud800")", "\"\xc3\"", "\"\xed\xa0\x80\"",
                           R"("a)", R"("a"")"})
    CHECK_FALSE(schema_accepts(any, text));
  const Grammar two = compile(R"({"type":"string","minLength":2,"maxLength":2})");
  for (const char* text : {R"("ab")", R"("\n\t")", R"("\u0041\u0042")", "\"\xf0\x9f\x98\x80\xf0\x9f\x98\x80\"",
                           R"("\ud83d\ude00\ud83d\ude00")", "\"\xe2\x82\xac" "a\""})
    CHECK(schema_accepts(two, text));
  for (const char* text : {R"("a")", R"("abc")", R"("\ud83d\ude00")", "\"\xf0\x9f\x98\x80\""}) CHECK_FALSE(schema_accepts(two, text));
}

TEST_CASE("json schema: any_whitespace allows JSON whitespace between tokens only") {
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}},
      "b":{"enum":[{"x":[1,true]}]}},"required":["a"]})";
  const Grammar compact = compile(schema);
  const Grammar spaced = compile(schema, true);
  const std::string tight = R"({"a":[1,2],"b":{"x":[1,true]}})";
  const std::string loose = " {\n \"a\" : [ 1 ,\t2 ] ,\r\n\"b\":{ \"x\" : [1 , true ] } } ";
  CHECK(schema_accepts(compact, tight));
  CHECK(schema_accepts(spaced, tight));
  CHECK_FALSE(schema_accepts(compact, loose.substr(1, loose.size() - 2)));
  CHECK(schema_accepts(spaced, loose.substr(1, loose.size() - 2)));
  CHECK_FALSE(schema_accepts(spaced, loose));                    // not around the document
  CHECK_FALSE(schema_accepts(spaced, R"({"a":[1 2]})"));         // not instead of a comma
  CHECK_FALSE(schema_accepts(spaced, R"({"a":[1, 2], "b":{"x":[1, t rue]}})"));  // not inside a token
}

TEST_CASE("json schema: json_object_grammar accepts any object, nothing else") {
  for (const bool ws : {false, true}) {
    const Grammar g = json_object_grammar(ws);
    for (const char* text : {"{}", R"({"a":1})", R"({"a":{"b":[1,-2.5e+3,"x",null,true,false,{}]},"a":0})", R"({"":""})"})
      CHECK(schema_accepts(g, text));
    for (const char* text : {"[]", "1", "\"x\"", "null", R"({"a":01})", R"({"a":1.})", R"({a:1})", R"({"a":1,})"})
      CHECK_FALSE(schema_accepts(g, text));
    CHECK(schema_accepts(g, "{ \"a\" : [ 1 , 2 ] }") == ws);
  }
}

TEST_CASE("json schema: OpenAPI nullable, boolean schemas, unions") {
  const Grammar nullable = compile(R"({"type":"string","nullable":true,"maxLength":1})");
  CHECK(schema_accepts(nullable, "null"));
  CHECK(schema_accepts(nullable, R"("a")"));
  CHECK_FALSE(schema_accepts(nullable, R"("ab")"));
  const Grammar anything = compile("true");
  for (const char* text : {"1", "{}", "[[]]", R"("x")", "null"}) CHECK(schema_accepts(anything, text));
  const Grammar number = compile(R"({"type":["number","boolean"]})");
  for (const char* text : {"1", "-1.5e-3", "0.0", "true"}) CHECK(schema_accepts(number, text));
  CHECK_FALSE(schema_accepts(number, "null"));
}

TEST_CASE("json schema: what cannot be enforced is refused at its path (strict) or listed") {
  struct Case {
    std::string schema, where;
  };
  const std::vector<Case> cases = {
      {R"({"properties":{"n":{"type":"integer","multipleOf":3}}})", "/properties/n/multipleOf"},
      {R"({"type":"number","minimum":0.5})", "/minimum"},
      {R"({"type":"number","exclusiveMaximum":1})", "/exclusiveMaximum"},
      {R"({"type":"object","patternProperties":{"^x":{}}})", "/patternProperties"},
      {R"({"type":"object","propertyNames":{"maxLength":3}})", "/propertyNames"},
      {R"({"type":"object","dependencies":{"a":["b"]}})", "/dependencies"},
      {R"({"type":"object","minProperties":1})", "/minProperties"},
      {R"({"type":"object","maxProperties":1})", "/maxProperties"},
      {R"({"type":"array","uniqueItems":true})", "/uniqueItems"},
      {R"({"type":"array","contains":{"type":"integer"}})", "/contains"},
      {R"({"not":{"minimum":3}})", "/not"},
      {R"({"if":{"type":"string"},"then":{"minLength":1}})", "/if"},
      {R"({"type":"string","format":"uri"})", "/format"},
      {R"({"type":"string","format":"date","maxLength":5})", "/maxLength"},
      {R"({"oneOf":[{"type":"integer"},{"minimum":0}]})", "/oneOf"},
      {R"({"$ref":"http://example.com/schema.json"})", "/$ref"},
      {R"({"type":"string","maxLength":1100})", "/maxLength"},
      {R"({"type":"array","minItems":1001})", "/minItems"},
      {R"({"type":"string","enum":["a","b"],"format":"email"})", "/format"},
  };
  for (const Case& c : cases) {
    INFO(c.schema);
    CHECK(refusal(c.schema) == c.where);
    JsonSchemaOptions lenient;
    lenient.strict = false;
    JsonSchemaResult result;
    REQUIRE_NOTHROW(result = compile_json_schema(c.schema, lenient));
    REQUIRE(!result.unenforced.empty());
    CHECK(result.unenforced.front().rfind(c.where + ": ", 0) == 0);
  }
  // Irrelevant keywords are no refusal: they concern a type the schema excludes.
  CHECK(refusal(R"({"type":"string","multipleOf":3,"uniqueItems":true,"minProperties":2})") == "(compiled)");
  // Without strict the constraint is dropped, the rest holds.
  JsonSchemaOptions lenient;
  lenient.strict = false;
  const Grammar g = compile_json_schema(R"({"type":"string","maxLength":1100})", lenient).grammar;
  CHECK(schema_accepts(g, "\"" + std::string(1200, 'x') + "\""));  // over max_repeat (1000)
  CHECK_FALSE(schema_accepts(g, "1"));
}

TEST_CASE("json schema: invalid and unsatisfiable schemas name their path") {
  CHECK(refusal(R"({"type":"text"})") == "/type");
  CHECK(refusal(R"({"minLength":-1})") == "/minLength");
  CHECK(refusal(R"({"properties":{"a":{"$ref":"#/$defs/missing"}}})") == "/properties/a/$ref");
  CHECK(refusal(R"({"properties":{"a":{"$ref":"#nowhere"}}})") == "/properties/a/$ref");
  CHECK(refusal(R"({"anyOf":[]})") == "/anyOf");
  CHECK(refusal(R"({"properties":{"a":7}})") == "/properties/a");
  CHECK(refusal("[1]") == "");
  CHECK(refusal("{\"type\":") == "");
  CHECK(refusal("false") == "");
  CHECK(refusal(R"({"enum":[]})") == "/enum");
  CHECK(refusal(R"({"type":"string","enum":[1,2]})") == "/enum");
  CHECK(refusal(R"({"type":"array","minItems":3,"maxItems":2})") == "/minItems");
  CHECK(refusal(R"({"type":"string","minLength":3,"maxLength":2})") == "/minLength");
  CHECK(refusal(R"({"type":"object","properties":{"a":false},"required":["a"]})") == "/properties/a");
  CHECK(refusal(R"({"type":"object","properties":{"a":{"$ref":"#"}},"required":["a"]})") == "");  // infinite
  CHECK(refusal(R"({"allOf":[{"type":"string"},{"type":"integer"}]})") == "/allOf/1/type");
  // A property that cannot have a value must be absent, and is no "other" name either.
  const Grammar g = compile(R"({"type":"object","properties":{"a":false,"b":{"type":"integer"}},"additionalProperties":true})");
  CHECK(schema_accepts(g, R"({"b":1,"c":2})"));
  CHECK_FALSE(schema_accepts(g, R"({"a":1,"b":1})"));
  CHECK_FALSE(schema_accepts(g, R"({"b":1,"a":1})"));
}

TEST_CASE("json schema: limits") {
  JsonSchemaOptions options;
  options.limits.max_input_bytes = 20;
  CHECK(refusal(R"({"type":"string","maxLength":5})", options) == "");
  options = {};
  options.limits.max_depth = 4;
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 6; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  CHECK(refusal(deep, options).rfind("/items/items/items", 0) == 0);
  options.limits.max_depth = 2;  // also while parsing: JSON deeper than twice the schema depth
  CHECK(refusal(deep, options) == "");
  options = {};
  options.limits.max_repeat = 10;
  CHECK(refusal(R"({"type":"array","maxItems":11})", options) == "/maxItems");
  CHECK(refusal(R"({"type":"array","maxItems":10})", options) == "(compiled)");
  // $ref/anyOf expansions: each level doubles the work without memoization of branches
  std::string defs = R"({"$defs":{"d0":{"type":"integer"})";
  for (int i = 1; i <= 12; ++i)
    defs += ",\"d" + std::to_string(i) + "\":{\"anyOf\":[{\"$ref\":\"#/$defs/d" + std::to_string(i - 1) +
            "\"},{\"allOf\":[{\"$ref\":\"#/$defs/d" + std::to_string(i - 1) + "\"}]}]}";
  defs += R"(},"allOf":[{"$ref":"#/$defs/d12"}]})";
  options = {};
  options.limits.max_ref_expansions = 100;
  CHECK(refusal(defs, options) != "(compiled)");
  options = {};
  options.limits.max_elements = 50;
  CHECK(refusal(R"({"type":"object","properties":{"a":{"type":"string","format":"date-time"}}})", options) != "(compiled)");
  CHECK(refusal(R"({"type":"object","properties":{"a":{"type":"string","format":"date-time"}}})") == "(compiled)");
}

}  // namespace sluice::grammar
