// The generic tool format for templates that do not render tools: which models get it
// (model_chat_syntax), what the plan makes of tool_choice and parallel_tool_calls
// (plan_chat_tools), and the messages the template gets (generic_tool_messages),
// rendered through SmolLM2's and Gemma 3's own templates.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "proto/chat.h"
#include "proto/chat_render.h"
#include "server/api/generation/chat_generic_tools.h"
#include "server/api/generation/chat_tools.h"
#include "server/services/model_service.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::server::unit_server_api_test_chat_generic_tools {
namespace {

using Json = nlohmann::ordered_json;
using chat::ToolCallSyntax;

std::string read_template(const char* name) { return test::read_fixture(std::string("chat/templates/") + name); }

const Json kWeather = {{"type", "function"},
                       {"function",
                        {{"name", "get_weather"},
                         {"description", "Weather in a city."},
                         {"parameters",
                          {{"type", "object"},
                           {"properties", {{"city", {{"type", "string"}}}}},
                           {"required", {"city"}}}}}}};
const Json kTime = {{"type", "function"}, {"function", {{"name", "get_time"}}}};

std::string body_with(const Json& extra, Json messages = Json::array({{{"role", "user"}, {"content", "Paris?"}}})) {
  Json body = {{"model", "m"}, {"messages", std::move(messages)}, {"tools", Json::array({kWeather, kTime})}};
  for (const auto& [k, v] : extra.items()) body[k] = v;
  return body.dump();
}

proto::ChatRequest parsed(const std::string& body) {
  auto result = proto::parse_chat_request(body);
  if (auto* e = std::get_if<proto::ApiError>(&result)) FAIL("unexpected error: " << e->message << " param " << e->param);
  return std::get<proto::ChatRequest>(result);
}

chat::TemplateTraits generic_syntax() {
  chat::TemplateTraits traits;
  traits.tool_calls = ToolCallSyntax::generic;
  return traits;
}

ChatToolPlan plan_of(const Json& extra, const chat::TemplateTraits& syntax = generic_syntax()) {
  auto planned = plan_chat_tools(parsed(body_with(extra)), "m", syntax, config::Config{});
  if (auto* e = std::get_if<proto::ApiError>(&planned)) FAIL("unexpected refusal: " << e->message);
  return std::get<ChatToolPlan>(planned);
}

proto::ApiError refusal_of(const Json& extra, const chat::TemplateTraits& syntax) {
  auto planned = plan_chat_tools(parsed(body_with(extra)), "m", syntax, config::Config{});
  REQUIRE(std::holds_alternative<proto::ApiError>(planned));
  return std::get<proto::ApiError>(planned);
}

}  // namespace

TEST_CASE("generic tools: chosen for a template without tools unless the config names a parser") {
  config::ModelConfig entry;  // tool_call_parser "auto"
  for (const char* name : {"smollm2.jinja", "gemma3.jinja"}) {
    INFO(name);
    const chat::TemplateTraits traits = model_chat_syntax(read_template(name), entry);
    CHECK_FALSE(traits.renders_tools);
    CHECK(traits.tool_calls == ToolCallSyntax::generic);
  }
  CHECK(model_chat_syntax(read_template("qwen3.jinja"), entry).tool_calls == ToolCallSyntax::hermes);
  entry.tool_call_parser = "none";
  CHECK(model_chat_syntax(read_template("smollm2.jinja"), entry).tool_calls == ToolCallSyntax::none);
  entry.tool_call_parser = "generic";
  CHECK(model_chat_syntax(read_template("qwen3.jinja"), entry).tool_calls == ToolCallSyntax::generic);
}

TEST_CASE("generic tools: tool_choice auto allows calls or a response, from the first token") {
  const ChatToolPlan plan = plan_of(Json::object());
  CHECK(plan.generic);
  CHECK(plan.generic_instructions);
  CHECK_FALSE(plan.render_tools);
  CHECK_FALSE(plan.lazy);
  CHECK(plan.constrained_functions == std::vector<size_t>{0, 1});
  CHECK(plan.output.parse);
  CHECK(plan.output.parser.tool_calls == ToolCallSyntax::generic);
  CHECK(plan.output.parser.max_calls == -1);
  CHECK_FALSE(plan.output.parser.raw_response);
  CHECK(plan.grammar.calls_open == "{\"tool_calls\": [");
  CHECK(plan.grammar.calls_close == "]}");
  CHECK(plan.grammar.response_open == "{\"response\": ");
  CHECK_FALSE(plan.grammar.response_spec.has_value());
  CHECK(plan.grammar.parallel);
  CHECK_FALSE(plan.grammar.leading_whitespace);
}

TEST_CASE("generic tools: required, a named function and parallel_tool_calls false") {
  const ChatToolPlan required = plan_of({{"tool_choice", "required"}});
  CHECK(required.constrained_functions == std::vector<size_t>{0, 1});
  CHECK(required.grammar.response_open.empty());  // a call, always
  CHECK(required.grammar.parallel);

  const ChatToolPlan named = plan_of({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}});
  CHECK(named.constrained_functions == std::vector<size_t>{1});
  CHECK(named.grammar.response_open.empty());
  CHECK_FALSE(named.grammar.parallel);  // exactly one call of it

  const ChatToolPlan one = plan_of({{"parallel_tool_calls", false}});
  CHECK_FALSE(one.grammar.parallel);
  CHECK(one.output.parser.max_calls == 1);
  CHECK_FALSE(one.grammar.response_open.empty());

  const ChatToolPlan none = plan_of({{"tool_choice", "none"}});
  CHECK(none.generic);
  CHECK_FALSE(none.generic_instructions);
  CHECK(none.constrained_functions.empty());
  CHECK(none.output.parser.tool_calls == ToolCallSyntax::none);
}

TEST_CASE("generic tools: response_format with tool_choice auto") {
  const Json schema = {{"type", "object"}, {"properties", {{"n", {{"type", "integer"}}}}}};
  const ChatToolPlan json = plan_of(
      {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", schema}}}}}});
  REQUIRE(json.grammar.response_spec.has_value());
  CHECK(json.grammar.response_spec->kind == grammar::GrammarSpec::Kind::json_schema);
  CHECK(json.output.parser.raw_response);  // the response is the JSON text
  CHECK(json.constrained_functions.size() == 2);

  const ChatToolPlan object = plan_of({{"response_format", {{"type", "json_object"}}}});
  REQUIRE(object.grammar.response_spec.has_value());
  CHECK(object.grammar.response_spec->kind == grammar::GrammarSpec::Kind::json_object);

  // A constraint on the raw text covers the whole output instead (as with the native formats).
  const ChatToolPlan regex = plan_of({{"structured_outputs", {{"regex", "a+"}}}});
  CHECK(regex.constrained_functions.empty());
  CHECK(regex.output.parser.tool_calls == ToolCallSyntax::generic);

  const proto::ApiError forced =
      refusal_of({{"tool_choice", "required"}, {"response_format", {{"type", "json_object"}}}}, generic_syntax());
  CHECK(forced.param == "tool_choice");
}

TEST_CASE("generic tools: tool_call_parser none (or a named parser) keeps the 400") {
  chat::TemplateTraits none;  // renders no tools, no parser
  const proto::ApiError error = refusal_of(Json::object(), none);
  CHECK(error.status == 400);
  CHECK(error.param == "tools");
  CHECK(error.message.find("does not render tools") != std::string::npos);
  chat::TemplateTraits hermes;
  hermes.tool_calls = ToolCallSyntax::hermes;
  CHECK(refusal_of(Json::object(), hermes).message.find("does not render tools") != std::string::npos);
  // tool_choice none asks for nothing to be rendered: no refusal.
  auto planned = plan_chat_tools(parsed(body_with({{"tool_choice", "none"}})), "m", none, config::Config{});
  CHECK(std::holds_alternative<ChatToolPlan>(planned));
}

TEST_CASE("generic tools: the instructions follow tool_choice") {
  const auto instructions = [](const Json& extra) {
    const std::string body = body_with(extra);
    const proto::ChatRequest request = parsed(body);
    return generic_tools_instructions(request, proto::tools_in_order(request));
  };
  const std::string tools =
      "Tools you can call:\n"
      "{\"name\":\"get_weather\",\"description\":\"Weather in a city.\",\"parameters\":"
      "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}\n"
      "{\"name\":\"get_time\"}\n\n";
  const std::string call = "{\"tool_calls\": [{\"name\": \"<tool name>\", \"arguments\": {<arguments>}}]}";
  CHECK(instructions(Json::object()) == tools + "Reply with one JSON object only: " + call +
                                            " to call tools, or {\"response\": \"<your reply>\"} to reply in text.");
  CHECK(instructions({{"parallel_tool_calls", false}}) ==
        tools + "Reply with one JSON object only: " + call +
            " to call one tool, or {\"response\": \"<your reply>\"} to reply in text.");
  CHECK(instructions({{"tool_choice", "required"}}) == tools + "Reply with one JSON object only, calling tools: " + call);
  CHECK(instructions({{"tool_choice", "required"}, {"parallel_tool_calls", false}}) ==
        tools + "Reply with one JSON object only, calling one tool: " + call);
  CHECK(instructions({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}}) ==
        tools + "Reply with one JSON object only, calling get_time: "
                "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {<arguments>}}]}");
  CHECK(instructions({{"response_format", {{"type", "json_object"}}}}) ==
        tools + "Reply with one JSON object only: " + call +
            " to call tools, or {\"response\": <your reply as JSON, in the requested format>} to reply.");
}

TEST_CASE("generic tools: a tool loop renders through SmolLM2's and Gemma 3's own templates") {
  const Json messages = Json::array(
      {{{"role", "system"}, {"content", "Be brief."}},
       {{"role", "user"}, {"content", "Weather in Paris and Oslo?"}},
       {{"role", "assistant"},
        {"content", nullptr},
        {"tool_calls", Json::array({{{"id", "call_1"}, {"type", "function"},
                                     {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Paris\"}"}}}},
                                    {{"id", "call_2"}, {"type", "function"},
                                     {"function", {{"name", "get_weather"}, {"arguments", "{\"city\":\"Oslo\"}"}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", "18 C"}},
       {{"role", "tool"}, {"tool_call_id", "call_2"}, {"content", "5 C"}},
       {{"role", "user"}, {"content", "And now?"}}});
  const std::string body = body_with(Json::object(), messages);
  const proto::ChatRequest request = parsed(body);
  const proto::OrderedTools ordered = proto::tools_in_order(request);
  const std::vector<proto::ChatMessage> rewritten = generic_tool_messages(request, ordered, true);
  REQUIRE(rewritten.size() == 4);
  CHECK(rewritten[0].role == "system");
  CHECK(rewritten[0].content.starts_with("Be brief.\n\nTools you can call:\n"));
  CHECK(rewritten[2].role == "assistant");
  CHECK(rewritten[2].tool_calls.empty());
  CHECK(rewritten[2].content ==
        "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\"}}, "
        "{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\"}}]}");
  CHECK(rewritten[3].role == "user");
  CHECK(rewritten[3].content ==
        "Tool get_weather (call call_1) returned:\n18 C\n\nTool get_weather (call call_2) returned:\n5 C\n\nAnd now?");

  chat::RenderOptions options;
  options.bos_token = "<bos>";
  for (const char* name : {"smollm2.jinja", "gemma3.jinja"}) {
    INFO(name);
    const chat::ChatTemplate tmpl = chat::ChatTemplate::compile(read_template(name));
    // As sent, Gemma 3 refuses the conversation (a tool turn breaks its alternation).
    if (std::string(name) == "gemma3.jinja")
      CHECK_THROWS(tmpl.render(proto::template_messages(request.messages), true, options));
    const std::string text = tmpl.render(proto::template_messages(rewritten), true, options);
    CHECK(text.find("Tools you can call:") != std::string::npos);
    CHECK(text.find("{\"tool_calls\": [{\"name\": \"get_weather\"") != std::string::npos);
    CHECK(text.find("Tool get_weather (call call_2) returned:\n5 C") != std::string::npos);
  }

  // tool_choice none: no instructions, the history still as text.
  const std::vector<proto::ChatMessage> plain = generic_tool_messages(request, ordered, false);
  CHECK(plain[0].content == "Be brief.");
  CHECK(plain[2].content.starts_with("{\"tool_calls\": ["));

  // Without a system message the instructions are one; or, placed in the first user turn.
  const std::string short_body = body_with(Json::object());
  const proto::ChatRequest short_request = parsed(short_body);
  const proto::OrderedTools short_ordered = proto::tools_in_order(short_request);
  const auto first = generic_tool_messages(short_request, short_ordered, true);
  REQUIRE(first.size() == 2);
  CHECK(first[0].role == "system");
  const auto in_user = generic_tool_messages(short_request, short_ordered, true, GenericPlacement::first_user);
  REQUIRE(in_user.size() == 1);
  CHECK(in_user[0].role == "user");
  CHECK(in_user[0].content.starts_with("Tools you can call:"));
  CHECK(in_user[0].content.ends_with("\n\nParis?"));
}

}  // namespace sluice::server
