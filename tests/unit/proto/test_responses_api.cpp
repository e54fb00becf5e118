// proto/responses_api: a Responses API body into the chat request it asks for, and
// the 400s (with param) for what sluice does not serve.
#include "proto/responses_api.h"

#include <doctest/doctest.h>

#include <string>

namespace sluice::proto::unit_proto_test_responses_api {
namespace {

using OJson = nlohmann::ordered_json;

ResponsesRequest parsed(const std::string& body) {
  ResponsesParse result = parse_responses_request(body);
  if (auto* error = std::get_if<ApiError>(&result)) FAIL("unexpected error: " << error->message);
  return std::get<ResponsesRequest>(std::move(result));
}

ChatRequest chat_of(const std::string& body, const OJson& history = OJson::array()) {
  auto chat = to_chat_request(parsed(body), history);
  if (auto* error = std::get_if<ApiError>(&chat)) FAIL("unexpected error: " << error->message);
  return std::get<ChatRequest>(std::move(chat));
}

ApiError error_of(const std::string& body) {
  ResponsesParse result = parse_responses_request(body);
  if (auto* error = std::get_if<ApiError>(&result)) return *error;
  auto chat = to_chat_request(std::get<ResponsesRequest>(result), OJson::array());
  REQUIRE(std::holds_alternative<ApiError>(chat));
  return std::get<ApiError>(chat);
}

}  // namespace

TEST_CASE("responses request: a string input with instructions and sampling fields") {
  const std::string body = R"({"model":"m","input":"Hi","instructions":"Be brief.","max_output_tokens":16,
                               "temperature":0.5,"top_p":0.9,"user":"u1","metadata":{"k":"v"}})";
  const ResponsesRequest req = parsed(body);
  CHECK(req.store);
  CHECK_FALSE(req.stream);
  CHECK(req.echo["instructions"] == "Be brief.");
  CHECK(req.echo["max_output_tokens"] == 16);
  CHECK(req.echo["metadata"] == OJson{{"k", "v"}});
  CHECK(req.echo["tool_choice"] == "auto");
  const ChatRequest chat = chat_of(body);
  CHECK(chat.model == "m");
  REQUIRE(chat.messages.size() == 2);
  CHECK(chat.messages[0].role == "system");
  CHECK(chat.messages[0].content == "Be brief.");
  CHECK(chat.messages[1].role == "user");
  CHECK(chat.messages[1].content == "Hi");
  CHECK(chat.sampling.max_tokens == 16);
  CHECK(chat.sampling.temperature == doctest::Approx(0.5));
  CHECK(chat.sampling.top_p == doctest::Approx(0.9));
  CHECK(chat.user == "u1");
}

TEST_CASE("responses request: items become messages, calls and their outputs") {
  const std::string body = R"({"model":"m","input":[
      {"role":"user","content":[{"type":"input_text","text":"Weather?"}]},
      {"type":"reasoning","id":"rs_1","summary":[]},
      {"type":"message","role":"assistant","id":"msg_1","status":"completed",
       "content":[{"type":"output_text","text":"Checking.","annotations":[]}]},
      {"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
      {"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"},
      {"type":"function_call_output","call_id":"call_1","output":"sunny"},
      {"type":"function_call_output","call_id":"call_2","output":"noon"}]})";
  const ChatRequest chat = chat_of(body);
  REQUIRE(chat.messages.size() == 4);
  CHECK(chat.messages[0].content == "Weather?");
  CHECK(chat.messages[1].role == "assistant");
  CHECK(chat.messages[1].content == "Checking.");
  REQUIRE(chat.messages[1].tool_calls.size() == 2);
  CHECK(chat.messages[1].tool_calls[0].id == "call_1");
  CHECK(chat.messages[1].tool_calls[0].name == "get_weather");
  CHECK(chat.messages[1].tool_calls[0].arguments == "{\"city\":\"Paris\"}");
  CHECK(chat.messages[2].role == "tool");
  CHECK(chat.messages[2].tool_call_id == "call_1");
  CHECK(chat.messages[2].content == "sunny");
  CHECK(chat.messages[3].tool_call_id == "call_2");
}

TEST_CASE("responses request: history comes between the instructions and the input") {
  const OJson history = OJson::parse(R"([{"role":"user","content":"My name is Ada."},
                                         {"role":"assistant","content":"Hello Ada."}])");
  const ChatRequest chat = chat_of(R"({"model":"m","instructions":"S","input":"Name?"})", history);
  REQUIRE(chat.messages.size() == 4);
  CHECK(chat.messages[0].role == "system");
  CHECK(chat.messages[1].content == "My name is Ada.");
  CHECK(chat.messages[2].content == "Hello Ada.");
  CHECK(chat.messages[3].content == "Name?");
}

TEST_CASE("responses request: flat function tools, tool_choice and text.format map to chat's fields") {
  const std::string body = R"({"model":"m","input":"x","parallel_tool_calls":false,
      "tools":[{"type":"function","name":"get_weather","description":"d","strict":true,
                "parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"string"}}}}],
      "tool_choice":{"type":"function","name":"get_weather"}})";
  const ResponsesRequest req = parsed(body);
  CHECK(req.echo["tools"][0]["name"] == "get_weather");
  CHECK(req.echo["tools"][0]["type"] == "function");
  CHECK(req.echo["tool_choice"] == OJson{{"type", "function"}, {"name", "get_weather"}});
  auto chat = std::get<ChatRequest>(to_chat_request(req, OJson::array()));
  REQUIRE(chat.tools.size() == 1);
  CHECK(chat.tools[0].name == "get_weather");
  CHECK(chat.tools[0].strict == true);
  CHECK(chat.tool_choice.mode == ToolChoice::Mode::function);
  CHECK(chat.tool_choice.function == "get_weather");
  CHECK_FALSE(chat.parallel_tool_calls);
  // The schema keeps the client's key order ("z" before "a").
  CHECK(chat.tools[0].parameters.dump().find(R"("z":{"type":"string"},"a")") != std::string::npos);

  const ChatRequest schema = chat_of(R"({"model":"m","input":"x","text":{"format":{"type":"json_schema",
      "name":"p","strict":true,"schema":{"type":"object","properties":{"b":{"type":"boolean"}}}}}})");
  REQUIRE(schema.structured_output);
  CHECK(schema.structured_output->spec.kind == grammar::GrammarSpec::Kind::json_schema);
  const ChatRequest object = chat_of(R"({"model":"m","input":"x","text":{"format":{"type":"json_object"}}})");
  REQUIRE(object.structured_output);
  CHECK(object.structured_output->spec.kind == grammar::GrammarSpec::Kind::json_object);
  CHECK_FALSE(chat_of(R"({"model":"m","input":"x","text":{"format":{"type":"text"}}})").structured_output);
}

TEST_CASE("responses request: accepted options") {
  const ResponsesRequest req = parsed(R"({"model":"m","input":"x","stream":true,"store":false,
      "previous_response_id":"resp_1","truncation":"auto","reasoning":{"effort":"low"},"background":false,
      "include":[],"service_tier":"auto"})");
  CHECK(req.stream);
  CHECK_FALSE(req.store);
  CHECK(req.previous_response_id == "resp_1");
  CHECK(req.echo["truncation"] == "auto");
  CHECK(req.echo["reasoning"]["effort"] == "low");
  CHECK(req.echo["store"] == false);
  CHECK(req.echo["previous_response_id"] == "resp_1");
}

TEST_CASE("responses request: refusals name the field") {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"input":"x"})", "model"},
      {R"({"model":"m"})", "input"},
      {R"({"model":"m","input":5})", "input"},
      {R"({"model":"m","input":[]})", "input"},
      {R"({"model":"m","input":"x","background":true})", "background"},
      {R"({"model":"m","input":"x","tools":[{"type":"web_search"}]})", "tools[0].type"},
      {R"({"model":"m","input":"x","tools":[{"type":"file_search","vector_store_ids":[]}]})", "tools[0].type"},
      {R"({"model":"m","input":"x","tool_choice":{"type":"web_search_preview"}})", "tool_choice.type"},
      {R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]})",
       "input[0].content[0].type"},
      {R"({"model":"m","input":[{"type":"item_reference","id":"x"}]})", "input[0].type"},
      {R"({"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]})", "input[0].call_id"},
      {R"({"model":"m","input":[{"role":"tool","content":"x"}]})", "input[0].role"},
      {R"({"model":"m","input":"x","truncation":"middle"})", "truncation"},
      {R"({"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}})", "text.format.schema"},
      {R"({"model":"m","input":"x","conversation":"c"})", "conversation"},
      // Checked by the chat parser, named as this API spells them.
      {R"({"model":"m","input":"x","max_output_tokens":0})", "max_output_tokens"},
      {R"({"model":"m","input":"x","temperature":3})", "temperature"},
      {R"({"model":"m","input":"x","tools":[{"type":"function","name":"bad name"}]})", "tools[0].name"},
      {R"({"model":"m","input":"x","tool_choice":"required"})", "tool_choice"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.body);
    const ApiError error = error_of(c.body);
    CHECK(error.status == 400);
    CHECK(error.param == c.param);
  }
}

TEST_CASE("responses request: unknown fields are ignored, or refused when strict") {
  const std::string body = R"({"model":"m","input":"x","frobnicate":1})";
  CHECK(parsed(body).ignored_fields == std::vector<std::string>{"frobnicate"});
  ResponsesParse strict = parse_responses_request(body, {.strict_fields = true});
  REQUIRE(std::holds_alternative<ApiError>(strict));
  CHECK(std::get<ApiError>(strict).param == "frobnicate");
}

TEST_CASE("responses request: unknown fields at any depth follow the same rule, by path") {
  struct Case {
    const char* body;
    const char* param;
  };
  const Case cases[] = {
      {R"({"model":"m","input":"x","tools":[{"type":"function","name":"f","bogus":1}]})", "tools[0].bogus"},
      {R"({"model":"m","input":[{"role":"user","content":"x","mood":"ok"}]})", "input[0].mood"},
      {R"({"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"x","lang":"en"}]}]})",
       "input[0].content[0].lang"},
      {R"({"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}","trace":1}]})",
       "input[0].trace"},
      {R"({"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},
           {"type":"function_call_output","call_id":"c","output":"r","trace":1}]})",
       "input[1].trace"},
      {R"({"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{},"hint":1}}})",
       "text.format.hint"},
      {R"({"model":"m","input":"x","text":{"format":{"type":"json_object","hint":1}}})", "text.format.hint"},
      {R"({"model":"m","input":"x","text":{"colour":"red"}})", "text.colour"},
      {R"({"model":"m","input":"x","reasoning":{"depth":"deep"}})", "reasoning.depth"},
      {R"({"model":"m","input":"x","tools":[{"type":"function","name":"f"}],
           "tool_choice":{"type":"function","name":"f","why":"x"}})",
       "tool_choice.why"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.body);
    const ResponsesRequest lenient = parsed(c.body);
    CHECK(lenient.ignored_fields == std::vector<std::string>{c.param});
    auto chat = to_chat_request(lenient, OJson::array());
    CHECK(std::holds_alternative<ChatRequest>(chat));
    ResponsesParse strict = parse_responses_request(c.body, {.strict_fields = true});
    REQUIRE(std::holds_alternative<ApiError>(strict));
    CHECK(std::get<ApiError>(strict).param == c.param);
    CHECK(std::get<ApiError>(strict).status == 400);
  }
}

TEST_CASE("responses request: an earlier response's output items, as the SDK sends them back, pass even when strict") {
  // response.output items (model_dump) appended to the next request's input.
  const std::string body = R"({"model":"m","input":[
      {"role":"user","content":"Weather in Paris?"},
      {"type":"message","id":"msg_1","status":"completed","role":"assistant","phase":"final_answer",
       "content":[{"type":"output_text","text":"Checking.","annotations":[],"logprobs":[]}]},
      {"type":"function_call","id":"fc_1","status":"completed","call_id":"call_1","name":"get_weather",
       "arguments":"{\"city\":\"Paris\"}","caller":{"type":"direct"},"namespace":"weather"},
      {"type":"function_call_output","id":"fco_1","status":"completed","call_id":"call_1","output":"18C",
       "caller":{"type":"direct"},"name":"get_weather"},
      {"role":"user","content":[{"type":"input_text","text":"Thanks","prompt_cache_breakpoint":{"mode":"explicit"}}]}],
    "tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":null,
              "defer_loading":false,"output_schema":null}],
    "reasoning":{"effort":"low","mode":"standard"}})";
  ResponsesParse strict = parse_responses_request(body, {.strict_fields = true});
  if (auto* error = std::get_if<ApiError>(&strict)) FAIL("unexpected error: " << error->message);
  const ResponsesRequest& req = std::get<ResponsesRequest>(strict);
  CHECK(req.ignored_fields == std::vector<std::string>{
                                  "input[1].id", "input[1].status", "input[1].phase", "input[1].content[0].annotations",
                                  "input[1].content[0].logprobs", "input[2].id", "input[2].status", "input[2].caller",
                                  "input[2].namespace", "input[3].id", "input[3].status", "input[3].caller",
                                  "input[3].name", "input[4].content[0].prompt_cache_breakpoint",
                                  "tools[0].defer_loading", "reasoning.mode"});
  auto chat = to_chat_request(req, OJson::array(), {.strict_fields = true});
  REQUIRE(std::holds_alternative<ChatRequest>(chat));
  const ChatRequest& request = std::get<ChatRequest>(chat);
  REQUIRE(request.messages.size() == 4);
  CHECK(request.messages[1].content == "Checking.");
  REQUIRE(request.messages[1].tool_calls.size() == 1);
  CHECK(request.messages[1].tool_calls[0].id == "call_1");
  CHECK(request.messages[2].tool_call_id == "call_1");
  CHECK(request.messages[3].content == "Thanks");
}

TEST_CASE("responses request: the not-found errors are 404 invalid_request_error") {
  const ApiError previous = previous_response_not_found("resp_x");
  CHECK(previous.status == 404);
  CHECK(previous.type == "invalid_request_error");
  CHECK(previous.param == "previous_response_id");
  CHECK(response_not_found("resp_x").status == 404);
}

}  // namespace sluice::proto
