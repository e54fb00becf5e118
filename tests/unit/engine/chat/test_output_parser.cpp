// The output parser on recorded-style model outputs: each fixture's whole-output
// result, and the streaming property that every split of the output into pushes
// gives events that concatenate to that same result (the known failure of streaming
// tool parsers is a per-chunk bug that whole responses never show).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/chat/output_parser.h"
#include "engine/chat/tool_syntax.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::chat::unit_engine_chat_test_output_parser {
namespace {

struct Fixture {
  std::string name;
  std::string text;
  OutputParserOptions options;
  ParsedOutput expected;
};

OutputParserOptions qwen3() {
  return {ToolCallSyntax::hermes, ReasoningSyntax::think, false, -1};
}
OutputParserOptions hermes() { return {ToolCallSyntax::hermes, ReasoningSyntax::none, false, -1}; }
OutputParserOptions llama3() { return {ToolCallSyntax::llama3_json, ReasoningSyntax::none, false, -1}; }
OutputParserOptions generic() { return {ToolCallSyntax::generic, ReasoningSyntax::none, false, -1}; }

ParsedOutput expect(std::string content, std::string reasoning, std::vector<ParsedCall> calls) {
  ParsedOutput out;
  out.content = std::move(content);
  out.has_reasoning = !reasoning.empty();
  out.reasoning = std::move(reasoning);
  out.calls = std::move(calls);
  return out;
}

const char* kind_name(OutputEvent::Kind kind) {
  switch (kind) {
    case OutputEvent::Kind::content: return "content";
    case OutputEvent::Kind::reasoning: return "reasoning";
    case OutputEvent::Kind::call_begin: return "call_begin";
    case OutputEvent::Kind::call_arguments: return "call_arguments";
  }
  return "?";
}

// The message the events spell, checking their order on the way: a call's begin
// comes before its arguments, and calls begin as 0, 1, 2, ...
ParsedOutput replay(const std::vector<OutputEvent>& events) {
  ParsedOutput out;
  for (const OutputEvent& event : events) {
    INFO("event " << kind_name(event.kind) << " #" << event.call_index << " '" << event.text << "'");
    switch (event.kind) {
      case OutputEvent::Kind::content: out.content += event.text; break;
      case OutputEvent::Kind::reasoning: out.reasoning += event.text; break;
      case OutputEvent::Kind::call_begin:
        REQUIRE(event.call_index == static_cast<int32_t>(out.calls.size()));
        out.calls.push_back({event.text, {}});
        break;
      case OutputEvent::Kind::call_arguments:
        REQUIRE(event.call_index >= 0);
        REQUIRE(event.call_index < static_cast<int32_t>(out.calls.size()));
        out.calls[static_cast<size_t>(event.call_index)].arguments += event.text;
        break;
    }
  }
  return out;
}

void check_same(const ParsedOutput& got, const ParsedOutput& want) {
  CHECK(got.content == want.content);
  CHECK(got.reasoning == want.reasoning);
  CHECK(got.calls.size() == want.calls.size());
  for (size_t i = 0; i < want.calls.size() && i < got.calls.size(); ++i) {
    INFO("call " << i);
    CHECK(got.calls[i].name == want.calls[i].name);
    CHECK(got.calls[i].arguments == want.calls[i].arguments);
  }
}

// Pushes the pieces, then finishes; the events must spell output() exactly.
ParsedOutput run_pieces(const std::vector<std::string_view>& pieces, const OutputParserOptions& options,
                        bool& has_reasoning) {
  OutputParser parser(options);
  std::vector<OutputEvent> events;
  for (const std::string_view piece : pieces) parser.push(piece, events);
  parser.finish(events);
  const ParsedOutput replayed = replay(events);
  check_same(replayed, parser.output());
  has_reasoning = parser.output().has_reasoning;
  return replayed;
}

void check_fixture(const Fixture& fixture) {
  INFO("fixture " << fixture.name);
  const ParsedOutput whole = parse_output(fixture.text, fixture.options);
  check_same(whole, fixture.expected);
  CHECK(whole.has_reasoning == fixture.expected.has_reasoning);

  const std::string_view text = fixture.text;
  bool has_reasoning = false;
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    INFO("split at byte " << cut);
    check_same(run_pieces({text.substr(0, cut), text.substr(cut)}, fixture.options, has_reasoning), whole);
    CHECK(has_reasoning == whole.has_reasoning);
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  INFO("one byte per push");
  check_same(run_pieces(bytes, fixture.options, has_reasoning), whole);
  CHECK(has_reasoning == whole.has_reasoning);
}

TEST_CASE("output parser: hermes and qwen3 fixtures, whole and every split") {
  OutputParserOptions one_call = hermes();
  one_call.max_calls = 1;
  OutputParserOptions prompt_thinks = qwen3();
  prompt_thinks.starts_in_reasoning = true;
  const std::vector<Fixture> fixtures = {
      {"qwen3 thinks then calls",
       "<think>\nI should call the tool.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
       "{\"city\": \"Paris\"}}\n</tool_call>",
       qwen3(), expect("", "I should call the tool.", {{"get_weather", "{\"city\": \"Paris\"}"}})},
      {"two calls",
       "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
       "\"arguments\": {\"y\": [1, {\"z\": \"]}\"}]}}\n</tool_call>",
       hermes(), expect("", "", {{"a", "{\"x\": 1}"}, {"b", "{\"y\": [1, {\"z\": \"]}\"}]}"}})},
      {"text before and after a call",
       "Let me check.\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n\nDone.",
       hermes(), expect("Let me check.Done.", "", {{"f", "{}"}})},
      {"call cut off by max_tokens",
       "<think>\nok\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa", qwen3(),
       expect("", "ok", {{"get_weather", "{\"city\": \"Pa"}})},
      {"cut off right after the name", "<tool_call>\n{\"name\": \"f\", \"arguments\": ", hermes(),
       expect("", "", {{"f", ""}})},
      {"invalid JSON inside the wrapper", "<tool_call>\nnot json\n</tool_call>", hermes(),
       expect("<tool_call>\nnot json\n</tool_call>", "", {})},
      {"name not first", "Sure. <tool_call>\n{\"arguments\": {}, \"name\": \"f\"}\n</tool_call>", hermes(),
       expect("Sure. <tool_call>\n{\"arguments\": {}, \"name\": \"f\"}\n</tool_call>", "", {})},
      {"a wrapper that is not a call, then a call",
       "<tool_call>\n<tool_call>\n{\"name\": \"f\", \"parameters\": {\"k\": true}}</tool_call>", hermes(),
       expect("<tool_call>", "", {{"f", "{\"k\": true}"}})},
      {"markup cut off before the name", "Hi <tool_call>\n{\"na", hermes(),
       expect("Hi <tool_call>\n{\"na", "", {})},
      {"a call inside thinking is reasoning",
       "<think>\nMaybe <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n</think>\n\nNo call needed.",
       qwen3(),
       expect("No call needed.", "Maybe <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", {})},
      {"arguments as a JSON string",
       "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": \\\"\\u00e9\\\\n\\\"}\"}\n</tool_call>", hermes(),
       expect("", "", {{"f", "{\"x\": \"\xC3\xA9\\n\"}"}})},
      {"escapes and unicode inside argument strings",
       "<tool_call>\n{\"name\": \"caf\\u00e9\", \"arguments\": {\"text\": \"a\\\"}b\", \"s\": \"\xF0\x9F\x98\x80 "
       "\\ud83d\\ude00 {[\"}}\n</tool_call>\nAfter.",
       hermes(),
       expect("After.", "",
              {{"caf\xC3\xA9", "{\"text\": \"a\\\"}b\", \"s\": \"\xF0\x9F\x98\x80 \\ud83d\\ude00 {[\"}"}})},
      {"scalar arguments", "<tool_call>{\"name\":\"f\",\"arguments\":null}</tool_call>", hermes(),
       expect("", "", {{"f", "null"}})},
      {"max_calls 1 drops the second call",
       "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
       "\"arguments\": {\"y\": 2}}\n</tool_call>\nThat is all.",
       one_call, expect("That is all.", "", {{"a", "{}"}})},
      {"text with '<' and trailing whitespace, hermes", "if a < b and c <tool then\n\n", hermes(),
       expect("if a < b and c <tool then\n\n", "", {})},
      {"prompt opened <think>", "I am thinking.\n</think>\n\nAnswer.", prompt_thinks,
       expect("Answer.", "I am thinking.", {})},
      {"reasoning cut off", "<think>\nstill thinking <tool_call> </thi", qwen3(),
       expect("", "still thinking <tool_call> </thi", {})},
      {"no <think> at the start: all answer", "  Hello <think>x</think>", qwen3(),
       expect("  Hello <think>x</think>", "", {})},
  };
  for (const Fixture& fixture : fixtures) check_fixture(fixture);
}

TEST_CASE("output parser: an empty reasoning span is still a span") {
  const Fixture fixture{"empty think", "<think>\n\n</think>\n\nHi", qwen3(), expect("Hi", "", {})};
  ParsedOutput expected = fixture.expected;
  expected.has_reasoning = true;
  check_fixture({fixture.name, fixture.text, fixture.options, expected});
}

TEST_CASE("output parser: llama3 json fixtures, whole and every split") {
  OutputParserOptions think_llama = llama3();
  think_llama.reasoning = ReasoningSyntax::think;
  const std::vector<Fixture> fixtures = {
      {"two calls separated by ;",
       "{\"name\": \"f\", \"parameters\": {\"x\": 1}}; {\"name\": \"g\", \"parameters\": {}}", llama3(),
       expect("", "", {{"f", "{\"x\": 1}"}, {"g", "{}"}})},
      {"python tag", "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"a;b\"}}", llama3(),
       expect("", "", {{"search", "{\"q\": \"a;b\"}"}})},
      {"leading whitespace and arguments key", "\n {\"name\": \"f\", \"arguments\": {}}\n", llama3(),
       expect("", "", {{"f", "{}"}})},
      {"plain JSON that is not a call", "{\"answer\": 42}", llama3(), expect("{\"answer\": 42}", "", {})},
      {"a call later in the text is content", "Sure: {\"name\": \"f\", \"parameters\": {}}", llama3(),
       expect("Sure: {\"name\": \"f\", \"parameters\": {}}", "", {})},
      {"text after a call", "{\"name\": \"f\", \"parameters\": {}}\nThanks", llama3(),
       expect("Thanks", "", {{"f", "{}"}})},
      {"a python tag not followed by a call", "Hi <|python_tag|>brave_search.call(query=\"x\")", llama3(),
       expect("Hi <|python_tag|>brave_search.call(query=\"x\")", "", {})},
      {"after reasoning", "<think>hm</think>\n{\"name\": \"f\", \"parameters\": {\"a\": [1]}}", think_llama,
       expect("", "hm", {{"f", "{\"a\": [1]}"}})},
  };
  for (const Fixture& fixture : fixtures) check_fixture(fixture);
}

TEST_CASE("output parser: generic envelope fixtures, whole and every split") {
  OutputParserOptions one_call = generic();
  one_call.max_calls = 1;
  OutputParserOptions raw = generic();
  raw.raw_response = true;
  OutputParserOptions think_generic = generic();
  think_generic.reasoning = ReasoningSyntax::think;
  const std::vector<Fixture> fixtures = {
      {"a text response", "{\"response\": \"Hello, world.\"}", generic(), expect("Hello, world.", "", {})},
      {"escapes in the response",
       "{\"response\": \"say \\\"hi\\\"\\n\\ttab \\\\ slash\\/ caf\\u00e9 \\ud83d\\ude00 \\u20AC\"}", generic(),
       expect("say \"hi\"\n\ttab \\ slash/ caf\xC3\xA9 \xF0\x9F\x98\x80 \xE2\x82\xAC", "", {})},
      {"raw UTF-8 in the response", "{\"response\": \"Gr\xC3\xBC\xC3\x9F\x65 \xF0\x9F\x98\x80 \xE4\xB8\xAD\"}", generic(),
       expect("Gr\xC3\xBC\xC3\x9F\x65 \xF0\x9F\x98\x80 \xE4\xB8\xAD", "", {})},
      {"a lone high surrogate, then one before another escape",
       "{\"response\": \"x\\ud83dy \\ud83d\\u0041 \\udc00\"}", generic(),
       expect("x\xEF\xBF\xBDy \xEF\xBF\xBD" "A \xEF\xBF\xBD", "", {})},
      {"a broken \\u escape drops the rest of the string", "{\"response\": \"ab\\uZZ\\\"cd\"}  Later.", generic(),
       expect("abLater.", "", {})},
      {"a response cut off inside an escape", "{\"response\": \"abc\\u00", generic(), expect("abc", "", {})},
      {"a response cut off after a high surrogate", "{\"response\": \"abc\\ud83d\\u", generic(),
       expect("abc\xEF\xBF\xBD", "", {})},
      {"an empty response", "{\"response\": \"\"}", generic(), expect("", "", {})},
      {"a response that is not a string is its JSON text", "{\"response\": {\"a\": [1, \"}\"]}}", generic(),
       expect("{\"a\": [1, \"}\"]}", "", {})},
      {"raw_response keeps a string as written", "{\"response\": \"x\\n\\u00e9\"}", raw,
       expect("\"x\\n\\u00e9\"", "", {})},
      {"raw_response, an object", "{\"response\": {\"k\": \"v}\"}}", raw, expect("{\"k\": \"v}\"}", "", {})},
      {"one call", "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]}",
       generic(), expect("", "", {{"get_weather", "{\"city\": \"Paris\"}"}})},
      {"two calls",
       "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": "
       "{\"y\": [\"]}\\\"\", {}]}}]}",
       generic(), expect("", "", {{"a", "{\"x\": 1}"}, {"b", "{\"y\": [\"]}\\\"\", {}]}"}})},
      {"max_calls 1 drops the second call",
       "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"y\": 2}}]}",
       one_call, expect("", "", {{"a", "{}"}})},
      {"whitespace anywhere between the pieces",
       " { \"tool_calls\" :\n [ {\"name\":\"f\",\"arguments\":{}} ,\n{ \"name\" : \"g\" , \"arguments\" : [] } ] } ",
       generic(), expect("", "", {{"f", "{}"}, {"g", "[]"}})},
      {"a call cut off by max_tokens",
       "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa",
       generic(), expect("", "", {{"a", "{}"}, {"get_weather", "{\"city\": \"Pa"}})},
      {"cut off before the first call's name", "{\"tool_calls\": [{\"na", generic(), expect("", "", {})},
      {"cut off inside the envelope's key", "{\"resp", generic(), expect("", "", {})},
      {"cut off before the next call's name",
       "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {}}, {\"name\": \"g", generic(),
       expect("", "", {{"f", "{}"}})},
      {"only whitespace", " \n", generic(), expect(" \n", "", {})},
      {"an empty call list is not a call", "{\"tool_calls\": []}", generic(), expect("{\"tool_calls\": []}", "", {})},
      {"text that does not open the envelope", "Hello {\"response\": \"x\"}", generic(),
       expect("Hello {\"response\": \"x\"}", "", {})},
      {"other JSON", "{\"answer\": 42}", generic(), expect("{\"answer\": 42}", "", {})},
      {"text after the envelope", "{\"response\": \"a\"}\n\nb", generic(), expect("ab", "", {})},
      {"a broken list after a call", "{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {}} oops", generic(),
       expect("oops", "", {{"f", "{}"}})},
      {"reasoning first", "<think>\nPick one.\n</think>\n\n{\"response\": \"Done\"}", think_generic,
       expect("Done", "Pick one.", {})},
  };
  for (const Fixture& fixture : fixtures) check_fixture(fixture);
}

TEST_CASE("output parser: a generic response streams each escape once it is whole") {
  OutputParser parser(generic());
  std::vector<OutputEvent> events;
  parser.push("{\"resp", events);
  CHECK(events.empty());  // may still open the envelope
  parser.push("onse\": \"ab\\u00", events);
  REQUIRE(events.size() == 1);
  CHECK(events[0].kind == OutputEvent::Kind::content);
  CHECK(events[0].text == "ab");
  parser.push("e9\\ud83d", events);
  REQUIRE(events.size() == 2);
  CHECK(events[1].text == "\xC3\xA9");  // the high surrogate waits for its pair
  parser.push("\\ude00!\"}", events);
  REQUIRE(events.size() == 3);
  CHECK(events[2].text == "\xF0\x9F\x98\x80!");
  parser.finish(events);
  CHECK(events.size() == 3);
  CHECK(parser.output().content == "ab\xC3\xA9\xF0\x9F\x98\x80!");

  OutputParser calls(generic());
  std::vector<OutputEvent> call_events;
  calls.push("{\"tool_calls\": [{\"name\": \"f\", \"arguments\": {\"a\": ", call_events);
  REQUIRE(call_events.size() == 2);
  CHECK(call_events[0].kind == OutputEvent::Kind::call_begin);
  CHECK(call_events[0].text == "f");
  CHECK(call_events[1].kind == OutputEvent::Kind::call_arguments);
  CHECK(call_events[1].text == "{\"a\": ");
}

TEST_CASE("output parser: without tools and reasoning it is the identity") {
  const std::vector<std::string> texts = {
      "", "plain", "a < b <tool_call>\n{\"name\": \"f\", \"arguments\": {}}</tool_call>  ",
      "<think>x</think>\n\n", "  \n\t", "{\"name\": \"f\", \"parameters\": {}}", "\xC3\xA9\xF0\x9F\x98\x80 <"};
  for (const std::string& text : texts) {
    check_fixture({"identity", text, {}, expect(text, "", {})});
  }
}

TEST_CASE("output parser: streams settled text at once and holds only possible markup") {
  OutputParser parser(qwen3());
  std::vector<OutputEvent> events;
  parser.push("<think>\nabc <tool_call> d\n</th", events);
  CHECK(parser.in_reasoning());
  REQUIRE(events.size() == 1);
  CHECK(events[0].text == "abc <tool_call> d");  // "\n</th" may still close reasoning
  parser.push("ink>\n\nHi <tool", events);
  CHECK_FALSE(parser.in_reasoning());
  REQUIRE(events.size() == 2);
  CHECK(events[1].kind == OutputEvent::Kind::content);
  CHECK(events[1].text == "Hi");  // " <tool" may start a call
  parser.push("_call>\n{\"name\": \"f\", \"arguments\": {\"a\": ", events);
  REQUIRE(events.size() == 4);
  CHECK(events[2].kind == OutputEvent::Kind::call_begin);
  CHECK(events[2].text == "f");
  CHECK(events[3].kind == OutputEvent::Kind::call_arguments);
  CHECK(events[3].text == "{\"a\": ");  // arguments stream before the value ends

  OutputParser plain(OutputParserOptions{});
  std::vector<OutputEvent> plain_events;
  plain.push("x <tool_call", plain_events);
  REQUIRE(plain_events.size() == 1);
  CHECK(plain_events[0].text == "x <tool_call");  // nothing to hold without tools
}

TEST_CASE("output parser: in_reasoning follows the prompt's open <think>") {
  OutputParserOptions options = qwen3();
  options.starts_in_reasoning = true;
  OutputParser parser(options);
  std::vector<OutputEvent> events;
  CHECK(parser.in_reasoning());
  CHECK(parser.output().has_reasoning);
  parser.push("done</think>ok", events);
  CHECK_FALSE(parser.in_reasoning());
  parser.finish(events);
  CHECK(parser.output().reasoning == "done");
  CHECK(parser.output().content == "ok");
}

TEST_CASE("output parser: syntax names round trip") {
  CHECK(tool_call_syntax_named("hermes") == ToolCallSyntax::hermes);
  CHECK(tool_call_syntax_named("llama3_json") == ToolCallSyntax::llama3_json);
  CHECK(tool_call_syntax_named("none") == ToolCallSyntax::none);
  CHECK(tool_call_syntax_named("generic") == ToolCallSyntax::generic);
  CHECK_FALSE(tool_call_syntax_named("mistral").has_value());
  CHECK(reasoning_syntax_named("qwen3") == ReasoningSyntax::think);
  CHECK(reasoning_syntax_named("deepseek_r1") == ReasoningSyntax::think);
  CHECK(reasoning_syntax_named("think") == ReasoningSyntax::think);
  CHECK(reasoning_syntax_named("none") == ReasoningSyntax::none);
  CHECK_FALSE(reasoning_syntax_named("").has_value());
  for (const auto syntax :
       {ToolCallSyntax::none, ToolCallSyntax::hermes, ToolCallSyntax::llama3_json, ToolCallSyntax::generic}) {
    CHECK(tool_call_syntax_named(tool_call_syntax_name(syntax)) == syntax);
  }
  for (const auto syntax : {ReasoningSyntax::none, ReasoningSyntax::think}) {
    CHECK(reasoning_syntax_named(reasoning_syntax_name(syntax)) == syntax);
  }
}

TEST_CASE("output parser: a call written in the tool call shape parses back") {
  for (const auto syntax : {ToolCallSyntax::hermes, ToolCallSyntax::llama3_json, ToolCallSyntax::generic}) {
    INFO(tool_call_syntax_name(syntax));
    const ToolCallShape shape = tool_call_shape(syntax);
    const std::string call_a = shape.before_name + "a" + shape.between + "{\"x\": 1}" + shape.after_arguments;
    const std::string call_b = shape.before_name + "b" + shape.between + "[]" + shape.after_arguments;
    const ParsedOutput parsed = parse_output(shape.calls_open + call_a + shape.separator + call_b + shape.calls_close,
                                             {syntax, ReasoningSyntax::none, false, -1});
    check_same(parsed, expect("", "", {{"a", "{\"x\": 1}"}, {"b", "[]"}}));
  }
  const ToolCallShape envelope = tool_call_shape(ToolCallSyntax::generic);
  check_same(parse_output(envelope.response_open + "\"hi\\n\"" + envelope.response_close, generic()),
             expect("hi\n", "", {}));
  CHECK(tool_call_shape(ToolCallSyntax::hermes).calls_open.empty());
  CHECK(tool_call_shape(ToolCallSyntax::hermes).trigger == "<tool_call>");
  CHECK(tool_call_shape(ToolCallSyntax::llama3_json).trigger.empty());
}

std::string read_template(const char* name) { return test::read_fixture(std::string("chat/templates/") + name); }

TEST_CASE("output parser: template traits of the committed templates") {
  const TemplateTraits qwen = template_traits(read_template("qwen3.jinja"));
  CHECK(qwen.renders_tools);
  CHECK(qwen.tool_calls == ToolCallSyntax::hermes);
  CHECK(qwen.reasoning == ReasoningSyntax::think);
  const TemplateTraits llama = template_traits(read_template("llama3.1.jinja"));
  CHECK(llama.renders_tools);
  CHECK(llama.tool_calls == ToolCallSyntax::llama3_json);
  CHECK(llama.reasoning == ReasoningSyntax::none);
  for (const char* name : {"smollm2.jinja", "gemma3.jinja"}) {
    INFO(name);
    const TemplateTraits traits = template_traits(read_template(name));
    CHECK_FALSE(traits.renders_tools);
    CHECK(traits.tool_calls == ToolCallSyntax::none);
    CHECK(traits.reasoning == ReasoningSyntax::none);
  }
  // `tools` counts only as a variable in code, not in text or inside string literals.
  CHECK_FALSE(template_traits("You have tools. {{ 'tools' }}{# tools #}{{ builtin_tools }}").renders_tools);
  CHECK(template_traits("{%- if tools %}x{% endif %}").renders_tools);
  CHECK(template_traits("{{ tools | tojson }}").renders_tools);
}

TEST_CASE("output parser: starts_in_reasoning reads the prompt's last think tag") {
  CHECK(starts_in_reasoning("<|im_start|>assistant\n<think>\n"));
  CHECK(starts_in_reasoning("<think>a</think> then <think>"));
  CHECK_FALSE(starts_in_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  CHECK_FALSE(starts_in_reasoning("<|im_start|>assistant\n"));
}

}  // namespace
}  // namespace sluice::chat
