// Errors with their positions, raise_exception, Undefined, limits, and the ChatTemplate API.
#include <doctest/doctest.h>

#include <string>
#include <thread>
#include <vector>

#include "engine/chat/chat_template.h"

namespace sluice::chat::unit_engine_chat_test_chat_interpreter {
namespace {

std::string render(const std::string& source, const std::vector<ChatMessage>& messages = {},
                   const RenderOptions& options = {}) {
  return ChatTemplate::compile(source).render(messages, false, options);
}

TemplateSyntaxError syntax_error(const std::string& source) {
  try {
    ChatTemplate::compile(source);
  } catch (const TemplateSyntaxError& e) {
    return e;
  }
  FAIL("no syntax error for: " << source);
  return TemplateSyntaxError(SourcePos{}, "");
}

TemplateRenderError render_error(const std::string& source, const RenderOptions& options = {}) {
  try {
    render(source, {}, options);
  } catch (const TemplateRenderError& e) {
    return e;
  }
  FAIL("no render error for: " << source);
  return TemplateRenderError(SourcePos{}, "");
}

TEST_CASE("syntax errors carry line and column") {
  auto e = syntax_error("a\n{% if x %}\n  {{ x | no_such_filter }}\n{% endif %}");
  CHECK(e.pos().line == 3);
  CHECK(e.pos().column == 10);
  CHECK(std::string(e.what()) == "line 3, column 10: no filter named 'no_such_filter'");

  e = syntax_error("{% if x %}\nyes");
  CHECK(e.pos().line == 2);
  CHECK(e.reason().find("expected 'endif'") != std::string::npos);

  e = syntax_error("one\ntwo {{ x");
  CHECK(e.pos().line == 2);
  CHECK(e.pos().column == 5);

  e = syntax_error("{% for x in y %}{% endif %}");
  CHECK(e.reason() == "unknown tag 'endif'");

  CHECK(syntax_error("\n\n   {% frobnicate %}").pos().line == 3);
  CHECK(syntax_error("\n\n   {% frobnicate %}").pos().column == 7);
  CHECK(syntax_error("{% call foo() %}{% endcall %}").reason() == "the 'call' tag is not supported");
  CHECK(syntax_error("{{ 'unterminated }}").reason() == "unterminated string literal");
  CHECK(syntax_error("{{ x is no_such_test }}").reason() == "no test named 'no_such_test'");
  CHECK(syntax_error("{{ (1 + 2 }}").reason().find("expected ')'") != std::string::npos);
  CHECK(syntax_error("{{ 1 + }}").reason().find("unexpected") != std::string::npos);
  CHECK(syntax_error("{# never closed").reason() == "missing end of comment tag");
  CHECK(syntax_error("{% raw %}never closed").reason() == "missing end of raw directive");
  CHECK(syntax_error("{{ x ] }}").reason() == "unexpected ']'");
}

TEST_CASE("raise_exception becomes TemplateRaisedError with the template's message") {
  const std::string source = "line one\n{{ raise_exception('Roles must alternate, got ' ~ messages[0].role) }}";
  const std::vector<ChatMessage> messages = {{"tool", "x", {}}};
  CHECK_THROWS_WITH_AS(render(source, messages), "Roles must alternate, got tool", TemplateRaisedError);
}

TEST_CASE("render errors carry the expression's position") {
  auto e = render_error("ok\n  {{ 1 + 'a' }}");
  CHECK(e.pos().line == 2);
  CHECK(e.reason() == "unsupported operand type(s) for +: 'int' and 'str'");
  CHECK(render_error("{{ x.y }}").reason() == "'x' is undefined");
  CHECK(render_error("{{ messages[3].role }}").reason() == "'list object' has no element 3");
  CHECK(render_error("{{ none.x.y }}").reason() == "'NoneType object' has no attribute 'x'");
  CHECK(render_error("{{ x() }}").reason() == "'x' is undefined");
  CHECK(render_error("{{ 'a'() }}").reason() == "'str' object is not callable");
  CHECK(render_error("{{ 1 // 0 }}").reason() == "integer division or modulo by zero");
  CHECK(render_error("{% for x in 5 %}{% endfor %}").reason() == "'int' object is not iterable");
  CHECK(render_error("{% set a, b = [1] %}").reason() == "not enough values to unpack (expected 2, got 1)");
  CHECK(render_error("{% set x = 1 %}{% set x.y = 2 %}").reason() == "cannot assign attribute on non-namespace object");
  CHECK(render_error("{{ [1] | tojson }}{{ x | tojson }}").reason() == "Object of type Undefined is not JSON serializable");
  CHECK(render_error("{{ 'a' in 1 }}").reason() == "argument of type 'int' is not iterable");
  CHECK(render_error("{{ 'x'.zfill(3) }}").reason() == "'str object' has no attribute 'zfill'");
}

TEST_CASE("Undefined behaves as jinja2's default Undefined") {
  CHECK(render("[{{ x }}]") == "[]");
  CHECK(render("{% if x %}yes{% else %}no{% endif %}") == "no");
  CHECK(render("{% for a in x %}a{% else %}none{% endfor %}") == "none");
  CHECK(render("{{ x | length }} {{ x | default('d') }} {{ x is defined }} {{ 'a' ~ x ~ 'b' }}") == "0 d False ab");
  CHECK(render("{{ x == x }} {{ x != 1 }} {{ not x }}") == "True True True");
  CHECK(render_error("{{ x + 1 }}").reason() == "'x' is undefined");
  CHECK(render_error("{{ x < 1 }}").reason() == "'x' is undefined");
}

TEST_CASE("the sandbox keeps inputs immutable") {
  const std::vector<ChatMessage> messages = {{"user", "hi", {}}};
  CHECK_THROWS_AS(render("{{ messages.append(1) }}", messages), TemplateRenderError);
  CHECK_THROWS_AS(render("{% set d = {} %}{{ d.update({'a': 1}) }}"), TemplateRenderError);
  CHECK(render("{{ messages[0]._private }}|", messages) == "|");
  CHECK_THROWS_AS(render("{% set ns = namespace() %}{% set ns._x = 1 %}"), TemplateRenderError);
}

TEST_CASE("limits stop hostile templates") {
  RenderLimits limits;
  limits.max_steps = 100000;
  RenderOptions options;
  options.limits = limits;
  auto e = render_error("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", options);
  CHECK(e.reason().find("steps") != std::string::npos);

  options.limits = RenderLimits{};
  options.limits.max_output_bytes = 1000;
  e = render_error("{% for i in range(100) %}{{ 'xxxxxxxxxxxxxxxxxxxx' }}{% endfor %}", options);
  CHECK(e.reason() == "template output exceeded 1000 bytes");

  e = render_error("{% set ns = namespace(s='x') %}{% for i in range(100) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}");
  CHECK(e.reason() == "string too long");
  CHECK(render_error("{{ 'x' * 1000000000 }}").reason() == "string too long");
  CHECK(render_error("{{ [1] * 100000000 }}").reason() == "list too long");
  CHECK(render_error("{{ range(1000000) | length }}").reason() == "range too big: at most 100000 items");

  e = render_error("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}");
  CHECK(e.reason() == "macro calls nested deeper than 64");

  const std::string deep = "{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}";
  CHECK(syntax_error(deep).reason() == "template nested too deeply");
  std::string deep_ifs;
  for (int i = 0; i < 500; ++i) deep_ifs += "{% if true %}";
  CHECK(syntax_error(deep_ifs).reason() == "template nested too deeply");
}

TEST_CASE("template source is normalized as jinja2 does") {
  CHECK(render("a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc\r\n") == "a\nb\nc");
  CHECK(render("{{ 'x' }}\n") == "x");
  CHECK(render("{{ 'x' }}\n\n") == "x\n");
  CHECK(render("  {%- if true %}a{% endif %}") == "a");
  CHECK(render("{{ {'a': {'b': 1}} }}") == "{'a': {'b': 1}}");
}

TEST_CASE("render passes messages, tools, special tokens and variables") {
  const ChatTemplate t = ChatTemplate::compile(
      "{{ bos_token }}|{{ eos_token is defined }}|{{ tools is none }}|{{ add_generation_prompt }}|"
      "{{ enable_thinking }}|{% for m in messages %}{{ m.role }}:{{ m.content }}:{{ m.tool_call_id }};{% endfor %}");
  RenderOptions options;
  options.bos_token = "<s>";
  options.variables.emplace_back("enable_thinking", Value(false));
  const std::vector<ChatMessage> messages = {{"user", "hi", {}}, {"tool", "42", {{"tool_call_id", Value("c1")}}}};
  CHECK(t.render(messages, true, options) == "<s>|False|True|True|False|user:hi:;tool:42:c1;");

  ValueDict tool;
  tool.set("name", Value("f"));
  options.tools = Value(ValueList{Value(std::move(tool))});
  CHECK(ChatTemplate::compile("{{ tools | tojson }}").render({}, false, options) == "[{\"name\": \"f\"}]");
}

TEST_CASE("reasoning fields are aliased as transformers does") {
  const ChatTemplate t = ChatTemplate::compile("{{ messages[0] | tojson }}");
  const std::vector<ChatMessage> messages = {{"assistant", "A", {{"reasoning", Value("R")}}}};
  CHECK(t.render(messages, false) ==
        R"({"thinking": "R", "role": "assistant", "content": "A", "reasoning": "R", "reasoning_content": "R"})");
  const std::vector<ChatMessage> null_content = {{"assistant", "", {{"content", Value::none()}}}};
  CHECK(t.render(null_content, false) == R"({"role": "assistant", "content": null})");
}

TEST_CASE("validate() accepts renderable templates and rejects the rest") {
  CHECK_NOTHROW(ChatTemplate::compile("{% for m in messages %}{{ m.content }}{% endfor %}").validate());
  // A template that refuses system messages is retried without one.
  CHECK_NOTHROW(ChatTemplate::compile(
                    "{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not "
                    "supported') }}{% endif %}{{ m.content }}{% endfor %}")
                    .validate());
  CHECK_THROWS_AS(ChatTemplate::compile("{{ messages[0].content.zfill(3) }}").validate(), TemplateRenderError);
  CHECK_THROWS_AS(ChatTemplate::compile("{{ raise_exception('never') }}").validate(), TemplateRaisedError);
}

TEST_CASE("one compiled template renders from many threads at once") {
  const ChatTemplate t = ChatTemplate::compile(
      "{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ m.content }}{% endfor %}"
      "{{ ns.n }}");
  std::vector<std::thread> threads;
  std::vector<std::string> results(4);
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      std::vector<ChatMessage> messages(100, ChatMessage{"user", "x", {}});
      for (int k = 0; k < 50; ++k) results[i] = t.render(messages, false);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& r : results) CHECK(r == std::string(100, 'x') + "100");
}

}  // namespace
}  // namespace sluice::chat
