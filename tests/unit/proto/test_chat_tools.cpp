// The tool-calling fields of /v1/chat/completions: tools / functions, tool_choice /
// function_call, parallel_tool_calls, include_reasoning, and the messages that carry
// tool calls and their results. Every refusal is checked by the `param` it names.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "proto/chat.h"
#include "proto/tokenize.h"
#include "proto/tools.h"

namespace unit_proto_test_chat_tools {

using namespace sluice::proto;
using Mode = ToolChoice::Mode;

namespace {

Json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }
Json tool(const std::string& name) { return {{"type", "function"}, {"function", {{"name", name}}}}; }
Json call(const std::string& id, const std::string& name, const std::string& arguments) {
  return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}
Json calling(const Json& calls) { return {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}}; }
Json answer(const std::string& id, const Json& content) {
  return {{"role", "tool"}, {"tool_call_id", id}, {"content", content}};
}

std::string body_with(const Json& extra) {
  Json body = {{"model", "m"}, {"messages", Json::array({user("hi")})}};
  for (const auto& [k, v] : extra.items()) body[k] = v;
  return body.dump();
}

ChatRequest ok(const Json& extra) {
  auto result = parse_chat_request(body_with(extra));
  if (auto* e = std::get_if<ApiError>(&result)) FAIL_CHECK("unexpected error: ", e->message, " param ", e->param);
  REQUIRE(std::holds_alternative<ChatRequest>(result));
  return std::get<ChatRequest>(result);
}

ApiError err(const Json& extra, const ParseOptions& parse = {}) {
  auto result = parse_chat_request(body_with(extra), parse);
  REQUIRE(std::holds_alternative<ApiError>(result));
  auto e = std::get<ApiError>(result);
  CHECK(e.status == 400);
  CHECK(e.type == "invalid_request_error");
  return e;
}

std::string err_param(const Json& extra, const ParseOptions& parse = {}) { return err(extra, parse).param; }
const ParseOptions kStrict{.strict_fields = true};
// An unknown key at `param`: ignored (and listed) by default, the 400 naming it when strict.
void check_unknown(const Json& extra, const std::string& param) {
  CAPTURE(param);
  CHECK(ok(extra).ignored_fields == std::vector<std::string>{param});
  CHECK(err_param(extra, kStrict) == param);
}
std::string tools_err(const Json& tools) { return err_param({{"tools", tools}}); }
std::string messages_err(const Json& messages) { return err_param({{"messages", messages}}); }

}  // namespace

TEST_CASE("chat tools: defaults without tools") {
  auto r = ok(Json::object());
  CHECK(r.tools.empty());
  CHECK(r.tool_choice.mode == Mode::none);
  CHECK(r.parallel_tool_calls);
  CHECK(r.include_reasoning);
  CHECK(r.ignored_fields.empty());
  for (const Json& nothing : {Json{{"tools", nullptr}, {"tool_choice", nullptr}},
                              Json{{"tools", Json::array()}}, Json{{"tools", Json::array()}, {"tool_choice", "none"}},
                              Json{{"tool_choice", "auto"}}, Json{{"functions", Json::array()}, {"function_call", "auto"}},
                              Json{{"parallel_tool_calls", nullptr}, {"include_reasoning", nullptr}}}) {
    CAPTURE(nothing.dump());
    r = ok(nothing);
    CHECK(r.tools.empty());
    CHECK(r.tool_choice.mode == Mode::none);  // nothing to call: auto is none
    CHECK(r.parallel_tool_calls);
    CHECK(r.include_reasoning);
  }
}

TEST_CASE("chat tools: a full tool definition, and auto by default") {
  Json schema = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}};
  Json weather = {{"type", "function"},
                  {"function", {{"name", "get_weather"}, {"description", "d"}, {"parameters", schema}, {"strict", true}}}};
  auto r = ok({{"tools", Json::array({weather, tool("mcp.server:search-v2")})}});
  REQUIRE(r.tools.size() == 2);
  CHECK(r.tools[0].name == "get_weather");
  CHECK(r.tools[0].description == "d");
  CHECK(r.tools[0].parameters == schema);
  CHECK(r.tools[0].strict == true);
  CHECK(r.tools[0].param == "tools[0]");
  CHECK(r.tools[1].name == "mcp.server:search-v2");
  CHECK_FALSE(r.tools[1].description.has_value());
  CHECK(r.tools[1].parameters.is_null());
  CHECK_FALSE(r.tools[1].strict.has_value());
  CHECK(r.tools[1].param == "tools[1]");
  CHECK(r.tool_choice.mode == Mode::auto_);

  // Nulls mean "absent"; a missing type is "function" (vLLM's default).
  r = ok({{"tools", Json::array({{{"function", {{"name", "f"}, {"description", nullptr}, {"parameters", nullptr},
                                                 {"strict", nullptr}}}}})}});
  CHECK(r.tools[0].name == "f");
  CHECK(r.tools[0].parameters.is_null());
  CHECK(ok({{"tools", Json::array({tool("f")})}, {"parallel_tool_calls", false}, {"include_reasoning", false}})
            .parallel_tool_calls == false);
  CHECK(ok({{"include_reasoning", false}}).include_reasoning == false);
}

TEST_CASE("chat tools: malformed tools name the field") {
  CHECK(tools_err("f") == "tools");
  CHECK(tools_err(Json::array({"f"})) == "tools[0]");
  CHECK(tools_err(Json::array({tool("f"), {{"type", "function"}, {"function", Json::object()}}})) ==
        "tools[1].function.name");
  CHECK(tools_err(Json::array({tool("f"), {{"type", "function"}, {"function", {{"name", nullptr}}}}})) ==
        "tools[1].function.name");
  CHECK(tools_err(Json::array({tool("f"), {{"type", "function"}}})) == "tools[1].function");
  CHECK(tools_err(Json::array({{{"type", "function"}, {"function", "f"}}})) == "tools[0].function");
  CHECK(tools_err(Json::array({{{"type", "function"}, {"function", {{"name", 7}}}}})) == "tools[0].function.name");
  CHECK(tools_err(Json::array({tool("f"), {{"type", "code_interpreter"}, {"function", {{"name", "g"}}}}})) ==
        "tools[1].type");
  CHECK(tools_err(Json::array({{{"type", 1}, {"function", {{"name", "g"}}}}})) == "tools[0].type");
  CHECK(tools_err(Json::array({{{"type", "function"}, {"function", {{"name", "g"}, {"parameters", "{}"}}}}})) ==
        "tools[0].function.parameters");
  CHECK(tools_err(Json::array({{{"type", "function"}, {"function", {{"name", "g"}, {"parameters", Json::array()}}}}})) ==
        "tools[0].function.parameters");
  CHECK(tools_err(Json::array({{{"type", "function"}, {"function", {{"name", "g"}, {"strict", "yes"}}}}})) ==
        "tools[0].function.strict");
  CHECK(tools_err(Json::array({{{"type", "function"}, {"function", {{"name", "g"}, {"description", 1}}}}})) ==
        "tools[0].function.description");
  // Unknown keys, inside as outside.
  check_unknown({{"tools", Json::array({{{"type", "function"}, {"function", {{"name", "g"}, {"examples", 1}}}}})}},
                "tools[0].function.examples");
  check_unknown({{"tools", Json::array({{{"type", "function"}, {"function", {{"name", "g"}}}, {"cache_control", 1}}})}},
                "tools[0].cache_control");
}

TEST_CASE("chat tools: function names") {
  CHECK(is_valid_tool_name("a"));
  CHECK(is_valid_tool_name("get_weather-2.v1:x"));
  CHECK(is_valid_tool_name(std::string(64, 'a')));
  CHECK_FALSE(is_valid_tool_name(std::string(65, 'a')));
  CHECK_FALSE(is_valid_tool_name(""));
  CHECK_FALSE(is_valid_tool_name("get weather"));
  CHECK_FALSE(is_valid_tool_name("f()"));
  CHECK_FALSE(is_valid_tool_name("caf\xc3\xa9"));
  for (const std::string& bad : std::vector<std::string>{"", "has space", "slash/name", std::string(65, 'x')}) {
    CAPTURE(bad);
    auto e = err({{"tools", Json::array({tool("ok"), tool(bad)})}});
    CHECK(e.param == "tools[1].function.name");
    CHECK(e.message.find("not a valid function name") != std::string::npos);
  }
  auto e = err({{"tools", Json::array({tool("a"), tool("b"), tool("a")})}});
  CHECK(e.param == "tools[2].function.name");
  CHECK(e.message == "Invalid value for 'tools[2].function.name': the function name 'a' is already used by "
                     "tools[0]; names must be unique.");
}

TEST_CASE("chat tools: tool_choice") {
  Json two = Json::array({tool("a"), tool("b")});
  CHECK(ok({{"tools", two}, {"tool_choice", "none"}}).tool_choice.mode == Mode::none);
  CHECK(ok({{"tools", two}, {"tool_choice", "auto"}}).tool_choice.mode == Mode::auto_);
  CHECK(ok({{"tools", two}, {"tool_choice", "required"}}).tool_choice.mode == Mode::required);
  CHECK(ok({{"tools", two}, {"tool_choice", nullptr}}).tool_choice.mode == Mode::auto_);
  auto r = ok({{"tools", two}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "b"}}}}}});
  CHECK(r.tool_choice.mode == Mode::function);
  CHECK(r.tool_choice.function == "b");
  CHECK(ok({{"tools", two}, {"tool_choice", {{"function", {{"name", "a"}}}}}}).tool_choice.function == "a");

  auto e = err({{"tools", two}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "c"}}}}}});
  CHECK(e.param == "tool_choice");
  CHECK(e.message == "Invalid value for 'tool_choice': no function named 'c' in 'tools'.");
  e = err({{"tool_choice", "required"}});
  CHECK(e.param == "tool_choice");
  CHECK(e.message == "Invalid value for 'tool_choice': 'required' needs a non-empty 'tools' to call from.");
  CHECK(err_param({{"tools", Json::array()}, {"tool_choice", "required"}}) == "tool_choice");
  CHECK(err_param({{"tool_choice", {{"type", "function"}, {"function", {{"name", "a"}}}}}}) == "tool_choice");
  CHECK(err_param({{"tools", two}, {"tool_choice", "any"}}) == "tool_choice");
  CHECK(err_param({{"tools", two}, {"tool_choice", 1}}) == "tool_choice");
  CHECK(err_param({{"tools", two}, {"tool_choice", {{"type", "file_search"}}}}) == "tool_choice.type");
  CHECK(err_param({{"tools", two}, {"tool_choice", {{"type", "function"}}}}) == "tool_choice.function");
  CHECK(err_param({{"tools", two}, {"tool_choice", {{"function", Json::object()}}}}) == "tool_choice.function.name");
  CHECK(err_param({{"tools", two}, {"tool_choice", {{"function", {{"name", 1}}}}}}) == "tool_choice.function.name");
  check_unknown({{"tools", two}, {"tool_choice", {{"function", {{"name", "a"}, {"x", 1}}}}}}, "tool_choice.function.x");
  check_unknown({{"tools", two}, {"tool_choice", {{"function", {{"name", "a"}}}, {"x", 1}}}}, "tool_choice.x");
}

TEST_CASE("chat tools: parallel_tool_calls and include_reasoning are booleans") {
  CHECK(err_param({{"parallel_tool_calls", "yes"}}) == "parallel_tool_calls");
  CHECK(err_param({{"include_reasoning", 1}}) == "include_reasoning");
}

TEST_CASE("chat tools: the legacy functions and function_call") {
  Json schema = {{"type", "object"}};
  Json functions = Json::array({{{"name", "a"}, {"description", "d"}, {"parameters", schema}}, {{"name", "b"}}});
  auto r = ok({{"functions", functions}});
  REQUIRE(r.tools.size() == 2);
  CHECK(r.tools[0].name == "a");
  CHECK(r.tools[0].description == "d");
  CHECK(r.tools[0].parameters == schema);
  CHECK(r.tools[0].param == "functions[0]");
  CHECK(r.tools[1].param == "functions[1]");
  CHECK(r.tool_choice.mode == Mode::auto_);
  CHECK(ok({{"functions", functions}, {"function_call", "none"}}).tool_choice.mode == Mode::none);
  CHECK(ok({{"functions", functions}, {"function_call", "auto"}}).tool_choice.mode == Mode::auto_);
  r = ok({{"functions", functions}, {"function_call", {{"name", "b"}}}});
  CHECK(r.tool_choice.mode == Mode::function);
  CHECK(r.tool_choice.function == "b");
  // function_call picks from the tools, whichever field brought them.
  CHECK(ok({{"tools", Json::array({tool("t")})}, {"function_call", {{"name", "t"}}}}).tool_choice.function == "t");

  CHECK(err_param({{"functions", Json::array({{{"description", "d"}}})}}) == "functions[0].name");
  CHECK(err_param({{"functions", Json::array({{{"name", "a b"}}})}}) == "functions[0].name");
  CHECK(err_param({{"functions", Json::array({{{"name", "a"}}, {{"name", "a"}}})}}) == "functions[1].name");
  CHECK(err_param({{"functions", Json::array({{{"name", "a"}, {"parameters", 1}}})}}) == "functions[0].parameters");
  CHECK(err_param({{"functions", Json::array({{{"name", "a"}, {"strict", true}}})}}) == "functions[0].strict");
  // A tools-form entry under the legacy key: its keys are unknown there (ignored unless
  // strict), so it has no name.
  CHECK(err_param({{"functions", Json::array({tool("a")})}}) == "functions[0].name");
  CHECK(err_param({{"functions", "a"}}) == "functions");
  auto e = err({{"functions", functions}, {"function_call", {{"name", "c"}}}});
  CHECK(e.param == "function_call");
  CHECK(e.message == "Invalid value for 'function_call': no function named 'c' in 'functions'.");
  CHECK(err_param({{"function_call", {{"name", "a"}}}}) == "function_call");
  CHECK(err_param({{"functions", functions}, {"function_call", "required"}}) == "function_call");
  CHECK(err_param({{"functions", functions}, {"function_call", Json::object()}}) == "function_call.name");
  check_unknown({{"functions", functions}, {"function_call", {{"name", "a"}, {"x", 1}}}}, "function_call.x");

  e = err({{"tools", Json::array({tool("a")})}, {"functions", functions}});
  CHECK(e.param == "functions");
  CHECK(e.message == "Send either 'tools' or the legacy 'functions', not both.");
  e = err({{"tools", Json::array({tool("a")})}, {"tool_choice", "auto"}, {"function_call", "auto"}});
  CHECK(e.param == "function_call");
  CHECK(e.message == "Send either 'tool_choice' or the legacy 'function_call', not both.");
}

TEST_CASE("chat tools: a tool round trip in messages") {
  Json messages = Json::array({user("weather in Paris and Oslo?"),
                               calling(Json::array({call("call_1", "get_weather", R"({"city":"Paris"})"),
                                                    call("call_2", "get_weather", R"({"city":"Oslo"})")})),
                               answer("call_1", "12C"),
                               answer("call_2", Json::array({{{"type", "text"}, {"text", "3C"}}, {{"type", "text"}, {"text", "rain"}}})),
                               {{"role", "assistant"}, {"content", "Paris 12C, Oslo 3C."}, {"reasoning_content", "both known"}}});
  auto r = ok({{"messages", messages}, {"tools", Json::array({tool("get_weather")})}});
  REQUIRE(r.messages.size() == 5);
  const ChatMessage& asked = r.messages[1];
  CHECK(asked.role == "assistant");
  CHECK(asked.content.empty());
  CHECK(asked.content_null);
  REQUIRE(asked.tool_calls.size() == 2);
  CHECK(asked.tool_calls[0].id == "call_1");
  CHECK(asked.tool_calls[0].name == "get_weather");
  CHECK(asked.tool_calls[0].arguments == R"({"city":"Paris"})");
  CHECK(asked.tool_calls[1].id == "call_2");
  CHECK(r.messages[2].role == "tool");
  CHECK(r.messages[2].tool_call_id == "call_1");
  CHECK(r.messages[2].content == "12C");
  CHECK_FALSE(r.messages[2].content_null);
  CHECK(r.messages[3].tool_call_id == "call_2");
  CHECK(r.messages[3].content == "3C\nrain");
  CHECK(r.messages[4].reasoning == "both known");
  CHECK_FALSE(r.messages[4].content_null);
  CHECK(r.messages[4].tool_calls.empty());

  // Absent content and no type are fine; `reasoning` is vLLM's name for it.
  Json bare = {{"role", "assistant"},
               {"reasoning", "think"},
               {"tool_calls", Json::array({{{"id", "c"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}})}};
  r = ok({{"messages", Json::array({user("q"), bare, answer("c", "r")})}});
  CHECK(r.messages[1].content_null);
  CHECK(r.messages[1].reasoning == "think");
  CHECK(r.messages[1].tool_calls[0].name == "f");
  // The same reasoning in both fields is fine.
  ok({{"messages", Json::array({{{"role", "assistant"}, {"content", "a"}, {"reasoning", "x"}, {"reasoning_content", "x"}}})}});
  // A plain assistant turn has content; null content without tool calls stays allowed.
  CHECK_FALSE(ok({{"messages", Json::array({{{"role", "assistant"}, {"content", "a"}}})}}).messages[0].content_null);
  CHECK(ok({{"messages", Json::array({user("a"), {{"role", "assistant"}, {"content", nullptr}}})}}).messages[1].content_null);
}

TEST_CASE("chat tools: legacy function messages") {
  Json messages = Json::array({user("q"),
                               {{"role", "assistant"}, {"content", nullptr},
                                {"function_call", {{"name", "f"}, {"arguments", R"({"x":1})"}}}},
                               {{"role", "function"}, {"name", "f"}, {"content", "42"}}});
  auto r = ok({{"messages", messages}});
  REQUIRE(r.messages[1].tool_calls.size() == 1);
  CHECK(r.messages[1].tool_calls[0].id.empty());
  CHECK(r.messages[1].tool_calls[0].name == "f");
  CHECK(r.messages[1].tool_calls[0].arguments == R"({"x":1})");
  CHECK(r.messages[1].content_null);
  CHECK(r.messages[2].role == "tool");
  CHECK(r.messages[2].name == "f");
  CHECK_FALSE(r.messages[2].tool_call_id.has_value());
  CHECK(r.messages[2].content == "42");

  CHECK(messages_err(Json::array({user("q"), {{"role", "function"}, {"content", "42"}}})) == "messages[1].name");
  CHECK(messages_err(Json::array({user("q"), {{"role", "function"}, {"name", "f"}}})) == "messages[1].content");
  CHECK(messages_err(Json::array({user("q"), {{"role", "function"}, {"name", "f"}, {"content", "1"}, {"tool_call_id", "c"}}})) ==
        "messages[1].tool_call_id");
  CHECK(messages_err(Json::array({{{"role", "assistant"}, {"function_call", {{"name", "f"}}}}})) ==
        "messages[0].function_call.arguments");
  CHECK(messages_err(Json::array({{{"role", "assistant"}, {"function_call", {{"arguments", "{}"}}}}})) ==
        "messages[0].function_call.name");
  CHECK(messages_err(Json::array({{{"role", "assistant"}, {"function_call", "f"}}})) == "messages[0].function_call");
  // Both forms of the call in one message.
  CHECK(messages_err(Json::array({{{"role", "assistant"},
                                   {"function_call", {{"name", "f"}, {"arguments", "{}"}}},
                                   {"tool_calls", Json::array({call("c", "f", "{}")})}}})) == "messages[0].tool_calls");
}

TEST_CASE("chat tools: tool messages must answer an earlier call") {
  Json asked = calling(Json::array({call("call_1", "f", "{}")}));
  auto e = err({{"messages", Json::array({user("q"), asked, answer("call_9", "x")})}});
  CHECK(e.param == "messages[2].tool_call_id");
  CHECK(e.message ==
        "Invalid value for 'messages[2].tool_call_id': 'call_9' answers no tool call of an earlier assistant message.");
  // Only earlier calls count.
  CHECK(messages_err(Json::array({user("q"), answer("call_1", "x"), asked})) == "messages[1].tool_call_id");
  // A call without an id can be answered by no tool message.
  Json no_id = calling(Json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}}));
  CHECK(messages_err(Json::array({user("q"), no_id, answer("", "x")})) == "messages[2].tool_call_id");
  ok({{"messages", Json::array({user("q"), no_id})}});

  e = err({{"messages", Json::array({user("q"), asked, {{"role", "tool"}, {"content", "x"}}})}});
  CHECK(e.param == "messages[2].tool_call_id");
  CHECK(e.message == "Missing required parameter: 'messages[2].tool_call_id'.");
  CHECK(messages_err(Json::array({user("q"), asked, {{"role", "tool"}, {"tool_call_id", nullptr}, {"content", "x"}}})) ==
        "messages[2].tool_call_id");
  CHECK(messages_err(Json::array({user("q"), asked, {{"role", "tool"}, {"tool_call_id", 1}, {"content", "x"}}})) ==
        "messages[2].tool_call_id");
  CHECK(messages_err(Json::array({user("q"), asked, {{"role", "tool"}, {"tool_call_id", "call_1"}}})) ==
        "messages[2].content");
  CHECK(messages_err(Json::array({user("q"), asked, answer("call_1", 5)})) == "messages[2].content");
}

TEST_CASE("chat tools: malformed tool calls and role-bound fields name the field") {
  auto calls_err = [](const Json& calls) { return messages_err(Json::array({user("q"), calling(calls)})); };
  CHECK(calls_err("c") == "messages[1].tool_calls");
  CHECK(calls_err(Json::array({"c"})) == "messages[1].tool_calls[0]");
  CHECK(calls_err(Json::array({{{"id", "1"}}})) == "messages[1].tool_calls[0].function");
  CHECK(calls_err(Json::array({call("1", "f", "{}"), {{"id", 2}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}})) ==
        "messages[1].tool_calls[1].id");
  CHECK(calls_err(Json::array({{{"id", "1"}, {"type", "code"}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}})) ==
        "messages[1].tool_calls[0].type");
  CHECK(calls_err(Json::array({{{"id", "1"}, {"function", {{"arguments", "{}"}}}}})) ==
        "messages[1].tool_calls[0].function.name");
  CHECK(calls_err(Json::array({{{"id", "1"}, {"function", {{"name", "f"}}}}})) ==
        "messages[1].tool_calls[0].function.arguments");
  CHECK(calls_err(Json::array({{{"id", "1"}, {"function", {{"name", "f"}, {"arguments", {{"x", 1}}}}}}})) ==
        "messages[1].tool_calls[0].function.arguments");
  // Unknown keys: ignored and listed by path, or the 400 naming them when strict.
  for (const auto& [calls, param] :
       {std::pair{Json::array({{{"id", "1"}, {"function", {{"name", "f"}, {"arguments", "{}"}, {"x", 1}}}}}),
                  "messages[1].tool_calls[0].function.x"},
        std::pair{Json::array({{{"id", "1"}, {"extra", 0}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}}),
                  "messages[1].tool_calls[0].extra"}}) {
    const std::string body = body_with({{"messages", Json::array({user("q"), calling(calls)})}});
    CHECK(ok({{"messages", Json::array({user("q"), calling(calls)})}}).ignored_fields == std::vector<std::string>{param});
    auto strict = parse_chat_request(body, {.strict_fields = true});
    REQUIRE(std::holds_alternative<ApiError>(strict));
    CHECK(std::get<ApiError>(strict).param == param);
  }
  // The index a client keeps from the stream deltas is accepted (and ignored).
  ok({{"messages", Json::array({user("q"), calling(Json::array({{{"id", "1"}, {"index", 0},
                                                                 {"function", {{"name", "f"}, {"arguments", "{}"}}}}}))})}});
  CHECK(calls_err(Json::array({{{"id", "1"}, {"index", -1}, {"function", {{"name", "f"}, {"arguments", "{}"}}}}})) ==
        "messages[1].tool_calls[0].index");

  // Fields of one role on another, when not null.
  CHECK(messages_err(Json::array({{{"role", "user"}, {"content", "q"}, {"tool_calls", Json::array({call("1", "f", "{}")})}}})) ==
        "messages[0].tool_calls");
  CHECK(messages_err(Json::array({{{"role", "user"}, {"content", "q"}, {"tool_call_id", "1"}}})) ==
        "messages[0].tool_call_id");
  CHECK(messages_err(Json::array({{{"role", "user"}, {"content", "q"}, {"reasoning_content", "r"}}})) ==
        "messages[0].reasoning_content");
  CHECK(messages_err(Json::array({{{"role", "user"}, {"content", "q"}, {"function_call", {{"name", "f"}}}}})) ==
        "messages[0].function_call");
  ok({{"messages", Json::array({{{"role", "user"}, {"content", "q"}, {"tool_calls", nullptr}, {"tool_call_id", nullptr},
                                 {"reasoning", nullptr}, {"function_call", nullptr}}})}});
  CHECK(messages_err(Json::array({{{"role", "assistant"}, {"content", "a"}, {"reasoning", 1}}})) == "messages[0].reasoning");
  CHECK(messages_err(Json::array({{{"role", "assistant"}, {"content", "a"}, {"reasoning", "x"}, {"reasoning_content", "y"}}})) ==
        "messages[0].reasoning_content");
}

TEST_CASE("chat tools: /tokenize reads the same messages") {
  Json messages = Json::array({user("q"), calling(Json::array({call("c1", "f", "{}")})), answer("c1", "r"),
                               {{"role", "function"}, {"name", "f"}, {"content", "s"}}});
  auto parsed = parse_tokenize_request(Json{{"messages", messages}}.dump());
  REQUIRE(std::holds_alternative<TokenizeRequest>(parsed));
  const auto& req = std::get<TokenizeRequest>(parsed);
  REQUIRE(req.messages.size() == 4);
  CHECK(req.messages[1].tool_calls.size() == 1);
  CHECK(req.messages[2].tool_call_id == "c1");
  CHECK(req.messages[3].role == "tool");
  auto refused = parse_tokenize_request(Json{{"messages", Json::array({user("q"), answer("c9", "r")})}}.dump());
  REQUIRE(std::holds_alternative<ApiError>(refused));
  CHECK(std::get<ApiError>(refused).param == "messages[1].tool_call_id");
}
}  // namespace unit_proto_test_chat_tools
