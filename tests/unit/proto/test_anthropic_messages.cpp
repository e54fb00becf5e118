// POST /v1/messages bodies: what the Anthropic fields become in the chat request
// sluice serves (messages, tools, tool_choice, thinking, stop_sequences), the refusals
// by the Anthropic field they name, and Anthropic's error shape.
#include <doctest/doctest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "proto/anthropic_messages.h"
#include "proto/chat_render.h"

namespace unit_proto_test_anthropic_messages {

using namespace sluice::proto;
using Mode = ToolChoice::Mode;

namespace {

Json user(const Json& content) { return {{"role", "user"}, {"content", content}}; }

std::vector<std::string> sorted(std::vector<std::string> items) {
  std::sort(items.begin(), items.end());
  return items;
}

std::string body_with(const Json& extra) {
  Json body = {{"model", "m"}, {"max_tokens", 16}, {"messages", Json::array({user("hi")})}};
  for (const auto& [k, v] : extra.items()) {
    if (v.is_null()) {
      body.erase(k);
    } else {
      body[k] = v;
    }
  }
  return body.dump();
}

MessagesRequest ok(const Json& extra, bool count_tokens = false) {
  auto result = parse_messages_request(body_with(extra), {}, count_tokens);
  if (auto* e = std::get_if<ApiError>(&result)) FAIL_CHECK("unexpected error: ", e->message, " param ", e->param);
  REQUIRE(std::holds_alternative<MessagesRequest>(result));
  return std::get<MessagesRequest>(result);
}

ApiError err(const Json& extra, bool count_tokens = false) {
  auto result = parse_messages_request(body_with(extra), {}, count_tokens);
  REQUIRE(std::holds_alternative<ApiError>(result));
  return std::get<ApiError>(result);
}

const Json kWeather = {{"name", "get_weather"},
                       {"description", "The weather in a city"},
                       {"input_schema",
                        {{"type", "object"},
                         {"properties", {{"city", {{"type", "string"}}}}},
                         {"required", {"city"}}}}};

}  // namespace

TEST_CASE("messages: a plain body becomes a chat request") {
  MessagesRequest r = ok({{"temperature", 0.5}, {"top_k", 5}, {"top_p", 0.9}, {"stop_sequences", {"END"}}});
  CHECK(r.model == "m");
  REQUIRE(r.messages.size() == 1);
  CHECK(r.messages[0].role == "user");
  CHECK(r.messages[0].content == "hi");
  CHECK(r.sampling.max_tokens == 16);
  CHECK(r.given.max_tokens);
  CHECK(r.sampling.temperature == doctest::Approx(0.5));
  CHECK(r.sampling.top_k == 5);
  CHECK(r.stop == std::vector<std::string>{"END"});
  CHECK_FALSE(r.stream);
  CHECK(r.tools.empty());
  CHECK(r.tool_choice.mode == Mode::none);
}

TEST_CASE("messages: system as a string or text blocks leads the conversation") {
  MessagesRequest a = ok({{"system", "Be brief."}});
  REQUIRE(a.messages.size() == 2);
  CHECK(a.messages[0].role == "system");
  CHECK(a.messages[0].content == "Be brief.");
  MessagesRequest b = ok({{"system", {{{"type", "text"}, {"text", "One."}}, {{"type", "text"}, {"text", "Two."}}}}});
  CHECK(b.messages[0].content == "One.\nTwo.");
  CHECK(err({{"system", {{{"type", "image"}}}}}).param == "system[0].type");
}

TEST_CASE("messages: tool_use and tool_result blocks become tool calls and tool messages") {
  const Json messages = {
      user({{{"type", "text"}, {"text", "Weather in Paris?"}}}),
      {{"role", "assistant"},
       {"content",
        {{{"type", "text"}, {"text", "Checking."}},
         {{"type", "tool_use"}, {"id", "toolu_1"}, {"name", "get_weather"}, {"input", {{"city", "Paris"}}}}}}},
      user({{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "18C"}},
            {{"type", "text"}, {"text", "And tomorrow?"}}})};
  MessagesRequest r = ok({{"messages", messages}, {"tools", {kWeather}}});
  REQUIRE(r.messages.size() == 4);
  CHECK(r.messages[1].role == "assistant");
  CHECK(r.messages[1].content == "Checking.");
  REQUIRE(r.messages[1].tool_calls.size() == 1);
  CHECK(r.messages[1].tool_calls[0].id == "toolu_1");
  CHECK(r.messages[1].tool_calls[0].name == "get_weather");
  CHECK(Json::parse(r.messages[1].tool_calls[0].arguments) == Json{{"city", "Paris"}});
  CHECK(r.messages[2].role == "tool");
  CHECK(r.messages[2].tool_call_id == "toolu_1");
  CHECK(r.messages[2].content == "18C");
  CHECK(r.messages[3].role == "user");
  CHECK(r.messages[3].content == "And tomorrow?");
  // The tools, with input_schema as the parameters, in the client's key order.
  REQUIRE(r.tools.size() == 1);
  CHECK(r.tools[0].name == "get_weather");
  CHECK(r.tools[0].parameters == kWeather["input_schema"]);
  CHECK(r.tool_choice.mode == Mode::auto_);
  OrderedTools ordered = tools_in_order(r);
  REQUIRE(ordered.parameters.size() == 1);
  CHECK(Json::parse(ordered.parameters[0]) == kWeather["input_schema"]);
}

TEST_CASE("messages: tool results in blocks, errors marked, unanswered ids refused") {
  const Json call = {{"role", "assistant"},
                     {"content", {{{"type", "tool_use"}, {"id", "t1"}, {"name", "get_weather"}, {"input", Json::object()}}}}};
  const Json result = user({{{"type", "tool_result"},
                             {"tool_use_id", "t1"},
                             {"is_error", true},
                             {"content", {{{"type", "text"}, {"text", "no such city"}}}}}});
  MessagesRequest r = ok({{"messages", {user("go"), call, result}}, {"tools", {kWeather}}});
  REQUIRE(r.messages.size() == 3);  // results alone make no user turn
  CHECK(r.messages[1].content_null);
  CHECK(r.messages[2].content == "Error: no such city");
  const Json stray = user({{{"type", "tool_result"}, {"tool_use_id", "t9"}, {"content", "x"}}});
  CHECK(err({{"messages", {user("go"), call, stray}}}).param == "messages[2].content[0].tool_use_id");
}

TEST_CASE("messages: tool_choice any, tool and none") {
  CHECK(ok({{"tools", {kWeather}}, {"tool_choice", {{"type", "any"}}}}).tool_choice.mode == Mode::required);
  MessagesRequest named = ok({{"tools", {kWeather}}, {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}}});
  CHECK(named.tool_choice.mode == Mode::function);
  CHECK(named.tool_choice.function == "get_weather");
  CHECK(ok({{"tools", {kWeather}}, {"tool_choice", {{"type", "none"}}}}).tool_choice.mode == Mode::none);
  MessagesRequest single =
      ok({{"tools", {kWeather}}, {"tool_choice", {{"type", "auto"}, {"disable_parallel_tool_use", true}}}});
  CHECK_FALSE(single.parallel_tool_calls);
  CHECK(err({{"tools", {kWeather}}, {"tool_choice", {{"type", "tool"}}}}).param == "tool_choice.name");
  CHECK(err({{"tools", {kWeather}}, {"tool_choice", {{"type", "sometimes"}}}}).param == "tool_choice.type");
  // A name that is no tool: the chat parser's refusal, in this API's field names.
  CHECK(err({{"tools", {kWeather}}, {"tool_choice", {{"type", "tool"}, {"name", "nope"}}}}).param.starts_with("tool_choice"));
}

TEST_CASE("messages: thinking maps to the template's enable_thinking") {
  CHECK(ok({{"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}}).chat_template_kwargs["enable_thinking"] == true);
  CHECK(ok({{"thinking", {{"type", "disabled"}}}}).chat_template_kwargs["enable_thinking"] == false);
  CHECK(ok({}).chat_template_kwargs.empty());
  CHECK(err({{"thinking", {{"type", "enabled"}, {"budget_tokens", "lots"}}}}).param == "thinking.budget_tokens");
}

TEST_CASE("messages: refusals name the Anthropic field") {
  CHECK(err({{"max_tokens", nullptr}}).param == "max_tokens");
  CHECK(err({{"max_tokens", nullptr}}).status == 400);
  CHECK(err({{"messages", nullptr}}).param == "messages");
  CHECK(err({{"messages", {{{"role", "system"}, {"content", "x"}}}}}).param == "messages[0].role");
  CHECK(err({{"messages", {user({{{"type", "image"}}})}}}).param == "messages[0].content[0].type");
  CHECK(err({{"messages", {user({{{"type", "tool_use"}, {"id", "a"}, {"name", "b"}, {"input", Json::object()}}})}}})
            .param == "messages[0].content[0].type");
  CHECK(err({{"tools", {{{"name", "x"}}}}}).param == "tools[0].input_schema");
  CHECK(err({{"tools", {{{"type", "web_search_20250305"}, {"name", "web_search"}}}}}).param == "tools[0].type");
  CHECK(err({{"stop_sequences", {""}}}).param == "stop_sequences");
  CHECK(err({{"temperature", 5}}).param == "temperature");
  // Unknown keys: ignored unless strict, as on the chat route.
  MessagesRequest lenient = ok({{"metadata", {{"user_id", "u"}}}, {"frobnicate", "c"}});
  CHECK(lenient.ignored_fields == std::vector<std::string>{"metadata", "frobnicate"});  // the client's order
  auto strict = parse_messages_request(body_with({{"frobnicate", "c"}}), {.strict_fields = true});
  REQUIRE(std::holds_alternative<ApiError>(strict));
  CHECK(std::get<ApiError>(strict).param == "frobnicate");
}

TEST_CASE("messages: the SDK's tool loop, its answer's content sent back as is (caller too), passes when strict") {
  // anthropic 2.14: response.content dumped into the next turn: a text block with its
  // citations and a tool_use block with its caller.
  const Json answer = {{"role", "assistant"},
                       {"content",
                        {{{"type", "text"}, {"text", "Checking."}, {"citations", nullptr}},
                         {{"type", "tool_use"},
                          {"id", "toolu_1"},
                          {"name", "get_weather"},
                          {"input", {{"city", "Paris"}}},
                          {"caller", {{"type", "direct"}}}}}}};
  const Json result = user({{{"type", "tool_result"}, {"tool_use_id", "toolu_1"}, {"content", "18C"},
                             {"cache_control", {{"type", "ephemeral"}}}}});
  const std::string body =
      body_with({{"messages", {user("Weather in Paris?"), answer, result}}, {"tools", {kWeather}}});
  for (const ParseOptions& options : {ParseOptions{}, ParseOptions{.strict_fields = true}}) {
    auto parsed = parse_messages_request(body, options);
    if (auto* e = std::get_if<ApiError>(&parsed)) FAIL_CHECK("unexpected error: ", e->message, " param ", e->param);
    REQUIRE(std::holds_alternative<MessagesRequest>(parsed));
    const MessagesRequest& r = std::get<MessagesRequest>(parsed);
    REQUIRE(r.messages.size() == 3);
    REQUIRE(r.messages[1].tool_calls.size() == 1);
    CHECK(r.messages[1].tool_calls[0].id == "toolu_1");
    CHECK(r.messages[2].tool_call_id == "toolu_1");
    CHECK(r.ignored_fields ==
          std::vector<std::string>{"messages[1].content[1].caller", "messages[2].content[0].cache_control"});
  }
}

TEST_CASE("messages: unknown keys in messages, blocks, tools, tool_choice, thinking: ignored by path, 400 if strict") {
  struct Case {
    Json extra;
    const char* param;
  };
  const Json tool_use = {{"type", "tool_use"}, {"id", "t1"}, {"name", "get_weather"}, {"input", Json::object()}};
  Json odd_tool_use = tool_use;
  odd_tool_use["trace"] = "x";
  const Case cases[] = {
      {{{"messages", {user({{{"type", "text"}, {"text", "hi"}, {"bogus", 1}}})}}}, "messages[0].content[0].bogus"},
      {{{"messages", {{{"role", "user"}, {"content", "hi"}, {"mood", "ok"}}}}}, "messages[0].mood"},
      {{{"messages", {user("go"), {{"role", "assistant"}, {"content", {odd_tool_use}}}}}, {"tools", {kWeather}}},
       "messages[1].content[0].trace"},
      {{{"messages", {user("go"), {{"role", "assistant"}, {"content", {tool_use}}},
                      user({{{"type", "tool_result"}, {"tool_use_id", "t1"}, {"content", "r"}, {"x", 1}}})}},
        {"tools", {kWeather}}},
       "messages[2].content[0].x"},
      {{{"messages", {user("go"), {{"role", "assistant"},
                                   {"content", {{{"type", "thinking"}, {"thinking", "hm"}, {"signature", "s"}, {"x", 1}}}}}}}},
       "messages[1].content[0].x"},
      {{{"system", {{{"type", "text"}, {"text", "Be brief."}, {"x", 1}}}}}, "system[0].x"},
      {{{"tools", {{{"name", "f"}, {"input_schema", {{"type", "object"}}}, {"x", 1}}}}}, "tools[0].x"},
      {{{"tools", {kWeather}}, {"tool_choice", {{"type", "auto"}, {"x", 1}}}}, "tool_choice.x"},
      {{{"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}, {"x", 1}}}}, "thinking.x"},
      {{{"thinking", {{"type", "disabled"}, {"budget_tokens", 1024}}}}, "thinking.budget_tokens"},
      {{{"output_config", {{"x", 1}}}}, "output_config.x"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.param);
    MessagesRequest lenient = ok(c.extra);
    CHECK(lenient.ignored_fields == std::vector<std::string>{c.param});
    auto strict = parse_messages_request(body_with(c.extra), {.strict_fields = true});
    REQUIRE(std::holds_alternative<ApiError>(strict));
    CHECK(std::get<ApiError>(strict).status == 400);
    CHECK(std::get<ApiError>(strict).param == c.param);
    CHECK(std::get<ApiError>(strict).message.find(c.param) != std::string::npos);
  }
}

TEST_CASE("messages: the SDK's other fields are accepted by name, even when strict") {
  const ParseOptions strict{.strict_fields = true};
  Json tool = kWeather;
  tool["strict"] = true;
  tool["cache_control"] = {{"type", "ephemeral"}, {"ttl", "1h"}};
  tool["eager_input_streaming"] = true;
  tool["defer_loading"] = false;
  tool["allowed_callers"] = {"direct"};
  tool["input_examples"] = {{{"city", "Paris"}}};
  const std::string body = body_with({{"tools", {tool}},
                                      {"cache_control", {{"type", "ephemeral"}}},
                                      {"container", "c1"},
                                      {"inference_geo", "us"},
                                      {"service_tier", "auto"},
                                      {"thinking", {{"type", "adaptive"}, {"display", "omitted"}}},
                                      {"output_config", {{"effort", "low"}}},
                                      {"system", {{{"type", "text"}, {"text", "S."}, {"cache_control", {{"type", "ephemeral"}}}}}}});
  auto parsed = parse_messages_request(body, strict);
  if (auto* e = std::get_if<ApiError>(&parsed)) FAIL_CHECK("unexpected error: ", e->message, " param ", e->param);
  REQUIRE(std::holds_alternative<MessagesRequest>(parsed));
  const MessagesRequest& r = std::get<MessagesRequest>(parsed);
  REQUIRE(r.tools.size() == 1);
  CHECK(r.tools[0].strict == true);  // the same promise as a chat function's strict
  CHECK(sorted(r.ignored_fields) == std::vector<std::string>{"cache_control", "container", "inference_geo", "output_config.effort",
                                                     "service_tier", "system[0].cache_control", "thinking.display",
                                                     "tools[0].allowed_callers", "tools[0].cache_control",
                                                     "tools[0].defer_loading", "tools[0].eager_input_streaming",
                                                     "tools[0].input_examples"});
  CHECK(err({{"tools", {kWeather}}, {"tool_choice", {{"type", "auto"}}}, {"container", 5}}).param == "container");
}

TEST_CASE("messages: output_config.format is the chat request's json_schema constraint") {
  const Json schema = {{"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}};
  MessagesRequest r = ok({{"output_config", {{"format", {{"type", "json_schema"}, {"schema", schema}}}}}});
  REQUIRE(r.structured_output.has_value());
  CHECK(r.structured_output->spec.kind == sluice::grammar::GrammarSpec::Kind::json_schema);
  CHECK(Json::parse(r.structured_output->spec.text) == schema);
  CHECK(r.structured_output->spec.strict);
  CHECK(err({{"output_config", {{"format", {{"type", "regex"}}}}}}).param == "output_config.format.type");
  CHECK(err({{"output_config", {{"format", {{"type", "json_schema"}}}}}}).param == "output_config.format.schema");
  CHECK(err({{"output_config", {{"format", {{"type", "json_schema"}, {"schema", 1}}}}}}).param ==
        "output_config.format.schema");
  // Count tokens takes it too (the format adds no tokens here, but the body is valid).
  CHECK(ok({{"max_tokens", nullptr}, {"output_config", {{"format", {{"type", "json_schema"}, {"schema", schema}}}}}},
           /*count_tokens=*/true)
            .structured_output.has_value());
}

TEST_CASE("messages: count_tokens bodies need no max_tokens") {
  MessagesRequest r = ok({{"max_tokens", nullptr}, {"tools", {kWeather}}}, /*count_tokens=*/true);
  CHECK(r.messages.size() == 1);
  CHECK(r.tools.size() == 1);
  CHECK(err({{"max_tokens", nullptr}, {"model", nullptr}}, true).param == "model");
}

TEST_CASE("messages: errors in Anthropic's shape") {
  const Json body = Json::parse(anthropic_error_body(invalid_request("bad", "x")));
  CHECK(body == Json{{"type", "error"}, {"error", {{"type", "invalid_request_error"}, {"message", "bad"}}}});
  CHECK(Json::parse(anthropic_error_body(model_not_found("m")))["error"]["type"] == "not_found_error");
  CHECK(Json::parse(anthropic_error_body(unauthorized()))["error"]["type"] == "authentication_error");
  const Json busy = Json::parse(anthropic_error_body({429, "busy", "x", "", ""}));
  CHECK(busy["error"]["type"] == "rate_limit_error");
  CHECK(busy["error"]["message"] == "busy");
  CHECK(Json::parse(anthropic_error_body(internal_error("req-1")))["error"]["type"] == "api_error");
}
}  // namespace unit_proto_test_anthropic_messages
