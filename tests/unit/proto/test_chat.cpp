#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "proto/chat.h"

namespace unit_proto_test_chat {

using namespace sluice::proto;

namespace {

Json user(const Json& content) { return {{"role", "user"}, {"content", content}}; }

std::string body_with(const Json& extra) {
  Json body = {{"model", "m"}, {"messages", Json::array({user("hi")})}};
  for (const auto& [k, v] : extra.items()) body[k] = v;
  return body.dump();
}

ChatRequest ok(const Json& extra, const ParseOptions& parse = {}) {
  auto result = parse_chat_request(body_with(extra), parse);
  if (auto* e = std::get_if<ApiError>(&result)) FAIL_CHECK("unexpected error: ", e->message, " param ", e->param);
  REQUIRE(std::holds_alternative<ChatRequest>(result));
  return std::get<ChatRequest>(result);
}

ApiError err(const std::string& raw, const ParseOptions& parse = {}) {
  auto result = parse_chat_request(raw, parse);
  REQUIRE(std::holds_alternative<ApiError>(result));
  auto e = std::get<ApiError>(result);
  CHECK(e.status == 400);
  CHECK(e.type == "invalid_request_error");
  return e;
}

std::string err_param(const Json& extra, const ParseOptions& parse = {}) { return err(body_with(extra), parse).param; }
const ParseOptions kStrict{.strict_fields = true};
std::string messages_err(const Json& messages) { return err_param({{"messages", messages}}); }

}  // namespace

TEST_CASE("chat: a minimal body and its defaults") {
  auto r = ok(Json::object());
  CHECK(r.model == "m");
  REQUIRE(r.messages.size() == 1);
  CHECK(r.messages[0].role == "user");
  CHECK(r.messages[0].content == "hi");
  CHECK_FALSE(r.messages[0].name.has_value());
  CHECK_FALSE(r.sampling.max_tokens.has_value());  // up to the context
  CHECK_FALSE(r.sampling.logprobs.has_value());
  CHECK(r.sampling.n == 1);
  CHECK_FALSE(r.stream);
}

TEST_CASE("chat: malformed JSON and a missing model or messages") {
  CHECK(err("{\"model\": ").param.empty());
  CHECK(err(R"({"messages":[{"role":"user","content":"x"}]})").param == "model");
  CHECK(err(R"({"model":"m"})").param == "messages");
  CHECK(err(R"({"model":"m","messages":null})").param == "messages");
  CHECK(messages_err(Json::array()) == "messages");
  CHECK(messages_err("hi") == "messages");
}

TEST_CASE("chat: roles") {
  Json messages = Json::array({{{"role", "developer"}, {"content", "be brief"}},
                               {{"role", "system"}, {"content", "s"}},
                               user("u"),
                               {{"role", "assistant"}, {"content", "a"}, {"name", "bot"}}});
  auto r = ok({{"messages", messages}});
  REQUIRE(r.messages.size() == 4);
  CHECK(r.messages[0].role == "system");
  CHECK(r.messages[0].content == "be brief");
  CHECK(r.messages[1].role == "system");
  CHECK(r.messages[3].role == "assistant");
  CHECK(r.messages[3].name == "bot");

  CHECK(messages_err(Json::array({user("a"), {{"role", "robot"}, {"content", "x"}}})) == "messages[1].role");
  CHECK(messages_err(Json::array({user("a"), {{"role", 1}, {"content", "x"}}})) == "messages[1].role");
  CHECK(messages_err(Json::array({{{"content", "x"}}})) == "messages[0].role");
  CHECK(messages_err(Json::array({"hi"})) == "messages[0]");
}

TEST_CASE("chat: content forms") {
  Json parts = Json::array({{{"type", "text"}, {"text", "one"}}, {{"type", "text"}, {"text", "two"}}});
  auto r = ok({{"messages", Json::array({user(parts)})}});
  CHECK(r.messages[0].content == "one\ntwo");
  CHECK(ok({{"messages", Json::array({user(Json::array())})}}).messages[0].content.empty());

  // An assistant turn may have null or no content; others may not.
  r = ok({{"messages", Json::array({user("a"), {{"role", "assistant"}, {"content", nullptr}}, user("b")})}});
  CHECK(r.messages[1].content.empty());
  ok({{"messages", Json::array({user("a"), {{"role", "assistant"}}})}});
  CHECK(messages_err(Json::array({user("a"), {{"role", "user"}}})) == "messages[1].content");
  CHECK(messages_err(Json::array({user("a"), user(nullptr)})) == "messages[1].content");
  CHECK(messages_err(Json::array({user("a"), user(5)})) == "messages[1].content");
  CHECK(messages_err(Json::array({user(Json::object())})) == "messages[0].content");
}

TEST_CASE("chat: content parts other than text name the part's type") {
  Json image = {{"type", "image_url"}, {"image_url", {{"url", "http://x"}}}};
  CHECK(messages_err(Json::array({user("a"), user(Json::array({{{"type", "text"}, {"text", "t"}}, image}))})) ==
        "messages[1].content[1].type");
  CHECK(messages_err(Json::array({user(Json::array({{{"text", "t"}}}))})) == "messages[0].content[0].type");
  CHECK(messages_err(Json::array({user(Json::array({{{"type", 3}}}))})) == "messages[0].content[0].type");
  CHECK(messages_err(Json::array({user(Json::array({{{"type", "text"}}}))})) == "messages[0].content[0].text");
  CHECK(messages_err(Json::array({user(Json::array({{{"type", "text"}, {"text", 1}}}))})) ==
        "messages[0].content[0].text");
  CHECK(messages_err(Json::array({user(Json::array({"plain"}))})) == "messages[0].content[0]");
  // An unknown key in a part: a 400 naming it only when strict (the nested-fields case below).
  CHECK(err_param({{"messages", Json::array({user(Json::array({{{"type", "text"}, {"text", "t"}, {"cache", 1}}}))})}},
                  kStrict) == "messages[0].content[0].cache");
}

TEST_CASE("chat: message fields") {
  CHECK(messages_err(Json::array({{{"role", "user"}, {"content", "x"}, {"name", 1}}})) == "messages[0].name");
  CHECK(err_param({{"messages", Json::array({{{"role", "user"}, {"content", "x"}, {"extra", 1}}})}}, kStrict) ==
        "messages[0].extra");
  // Round-tripped assistant messages: null fields pass; tool calls are read
  // (test_chat_tools.cpp), refusal and audio are not supported.
  ok({{"messages", Json::array({user("a"),
                                {{"role", "assistant"}, {"content", "b"}, {"tool_calls", nullptr},
                                 {"refusal", nullptr}, {"function_call", nullptr}, {"audio", nullptr}}})}});
  CHECK(messages_err(Json::array({{{"role", "assistant"}, {"content", "b"},
                                   {"tool_calls", Json::array({{{"id", "1"}}})}}})) == "messages[0].tool_calls[0].function");
  CHECK(messages_err(Json::array({{{"role", "assistant"}, {"content", "b"}, {"refusal", "no"}}})) == "messages[0].refusal");
}

TEST_CASE("chat: max_completion_tokens wins over max_tokens") {
  CHECK(ok({{"max_tokens", 10}}).sampling.max_tokens == 10);
  CHECK(ok({{"max_completion_tokens", 20}}).sampling.max_tokens == 20);
  CHECK(ok({{"max_tokens", 20}, {"max_completion_tokens", 20}}).sampling.max_tokens == 20);
  CHECK(ok({{"max_tokens", nullptr}, {"max_completion_tokens", 5}}).sampling.max_tokens == 5);
  CHECK(ok({{"max_tokens", 7}, {"max_completion_tokens", nullptr}}).sampling.max_tokens == 7);
  CHECK(err_param({{"max_tokens", 10}, {"max_completion_tokens", 20}}) == "max_completion_tokens");
  CHECK(err_param({{"max_tokens", 0}}) == "max_tokens");
  CHECK(err_param({{"max_completion_tokens", 0}}) == "max_completion_tokens");
  CHECK(err_param({{"max_completion_tokens", "5"}}) == "max_completion_tokens");
}

TEST_CASE("chat: logprobs and top_logprobs") {
  CHECK(ok({{"logprobs", true}}).sampling.logprobs == 0);
  CHECK(ok({{"logprobs", true}, {"top_logprobs", 20}}).sampling.logprobs == 20);
  CHECK_FALSE(ok({{"logprobs", false}}).sampling.logprobs.has_value());
  CHECK_FALSE(ok({{"logprobs", nullptr}, {"top_logprobs", nullptr}}).sampling.logprobs.has_value());
  CHECK(err_param({{"top_logprobs", 2}}) == "top_logprobs");
  CHECK(err_param({{"logprobs", false}, {"top_logprobs", 2}}) == "top_logprobs");
  CHECK(err_param({{"logprobs", true}, {"top_logprobs", 21}}) == "top_logprobs");
  CHECK(err_param({{"logprobs", true}, {"top_logprobs", -1}}) == "top_logprobs");
  CHECK(err_param({{"logprobs", 5}}) == "logprobs");
}

TEST_CASE("chat: response_format") {
  ok({{"response_format", {{"type", "text"}}}});
  ok({{"response_format", nullptr}});
  ok({{"response_format", {{"type", "json_object"}}}});  // structured outputs: test_structured_output.cpp
  CHECK(err_param({{"response_format", {{"type", "json_schema"}, {"json_schema", Json::object()}}}}) ==
        "response_format.json_schema.schema");
  CHECK(err_param({{"response_format", "text"}}) == "response_format");
  CHECK(err_param({{"response_format", Json::object()}}) == "response_format.type");
  CHECK(err_param({{"response_format", {{"type", "text"}, {"strict", true}}}}, kStrict) == "response_format.strict");
  CHECK(ok({{"response_format", {{"type", "text"}, {"strict", true}}}}).ignored_fields ==
        std::vector<std::string>{"response_format.strict"});

  // tools, tool_choice, parallel_tool_calls: test_chat_tools.cpp.
}

TEST_CASE("chat: the shared fields behave as in completions") {
  auto r = ok({{"temperature", 0},
               {"top_p", 0.5},
               {"n", 3},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"stop", Json::array({"x", "y"})},
               {"seed", 1},
               {"presence_penalty", 1},
               {"frequency_penalty", 1},
               {"logit_bias", {{"3", -1}}},
               {"user", "u"},
               {"top_k", 5},
               {"min_p", 0.1},
               {"repetition_penalty", 1.2},
               {"ignore_eos", true},
               {"priority", 1},
               {"timeout", 0.5}});
  CHECK(r.sampling.is_greedy());
  CHECK(r.sampling.n == 3);
  CHECK(r.include_usage);
  CHECK(r.stop.size() == 2);
  CHECK(r.sampling.logit_bias->at(3) == -1.0f);
  CHECK(r.timeout_s == 0.5);
  CHECK(err_param({{"temperature", 3}}) == "temperature");
  CHECK(err_param({{"stop", Json::array({"a", "b", "c", "d", "e"})}}) == "stop");
  CHECK(err_param({{"logit_bias", {{"x", 1}}}}) == "logit_bias");
  CHECK(err_param({{"stream_options", {{"include_usage", true}}}}) == "stream_options");
  CHECK(err_param({{"n", 17}}) == "n");
}

TEST_CASE("chat: unknown and completions-only fields are refused by name when strict, else ignored") {
  CHECK(err_param({{"prompt", "x"}}, kStrict) == "prompt");
  CHECK(err_param({{"echo", true}}, kStrict) == "echo");
  CHECK(err_param({{"best_of", 1}}, kStrict) == "best_of");
  auto e = err(body_with({{"tool_parser", "hermes"}}), kStrict);
  CHECK(e.param == "tool_parser");
  CHECK(e.message.find("tool_parser") != std::string::npos);
  ok({{"functions", Json::array()}}, kStrict);  // the legacy tools: test_chat_tools.cpp
  CHECK(ok({{"prompt", "x"}, {"echo", true}}).ignored_fields == std::vector<std::string>{"prompt", "echo"});
}

TEST_CASE("chat: OpenAI's fields are accepted (even when strict), type-checked, and ignored") {
  const Json fields = {{"store", false},
                       {"metadata", {{"k", "v"}}},
                       {"service_tier", "auto"},
                       {"reasoning_effort", "low"},
                       {"modalities", {"text"}},
                       {"prediction", {{"type", "content"}, {"content", "x"}}},
                       {"user", "u"},
                       {"verbosity", "low"},
                       {"prompt_cache_key", "k"},
                       {"safety_identifier", "s"},
                       {"audio", nullptr},
                       {"stream", true},
                       {"stream_options", {{"include_usage", true}, {"include_obfuscation", true}}}};
  auto r = ok(fields, kStrict);
  CHECK(r.user == "u");
  CHECK(r.include_usage);
  CHECK(r.ignored_fields.size() == 10);
  CHECK(err_param({{"store", "yes"}}) == "store");
  CHECK(err_param({{"metadata", "x"}}) == "metadata");
  CHECK(err_param({{"service_tier", 1}}) == "service_tier");
  CHECK(err_param({{"modalities", {"text", "audio"}}}) == "modalities");
  CHECK(err_param({{"audio", {{"voice", "alloy"}}}}) == "audio");
}

TEST_CASE("chat: vLLM's chat_template_kwargs and add_special_tokens") {
  auto r = ok({{"chat_template_kwargs", {{"enable_thinking", false}}}, {"add_special_tokens", true}});
  CHECK(r.chat_template_kwargs == Json{{"enable_thinking", false}});
  CHECK(r.add_special_tokens == true);
  CHECK(ok({}).chat_template_kwargs.empty());
  CHECK(err_param({{"chat_template_kwargs", "x"}}) == "chat_template_kwargs");
}

TEST_CASE("chat: continue_final_message continues a final assistant message") {
  const Json prefill = Json::array({user("hi"), {{"role", "assistant"}, {"content", "Sure: "}}});
  const ChatRequest plain = ok({});
  CHECK(plain.add_generation_prompt);
  CHECK_FALSE(plain.continue_final_message);
  // Continuing turns the generation prompt off unless the client sets it.
  const ChatRequest continued = ok({{"messages", prefill}, {"continue_final_message", true}});
  CHECK(continued.continue_final_message);
  CHECK_FALSE(continued.add_generation_prompt);
  CHECK_FALSE(ok({{"add_generation_prompt", false}}).add_generation_prompt);
  CHECK(err_param({{"messages", prefill}, {"continue_final_message", true}, {"add_generation_prompt", true}}) ==
        "continue_final_message");
  CHECK(err_param({{"continue_final_message", true}}) == "messages");  // the last message is the user's
  CHECK(err_param({{"continue_final_message", "yes"}}) == "continue_final_message");
}

TEST_CASE("chat: unknown keys at any depth are ignored and listed by path, or refused by path when strict") {
  const Json assistant = {{"role", "assistant"},
                          {"content", "b"},
                          {"tool_calls", Json::array({{{"id", "c1"},
                                                       {"type", "function"},
                                                       {"trace", "t"},
                                                       {"function", {{"name", "f"}, {"arguments", "{}"}, {"x", 1}}}}})}};
  const Json tool = {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "r"}};
  const Json body = {
      {"messages", Json::array({{{"role", "user"}, {"content", Json::array({{{"type", "text"}, {"text", "a"}, {"cache", 1}}})}, {"mood", "ok"}},
                                assistant, tool})},
      {"tools", Json::array({{{"type", "function"}, {"id", "t1"}, {"function", {{"name", "f"}, {"version", 2}}}}})},
      {"tool_choice", {{"type", "function"}, {"why", "x"}, {"function", {{"name", "f"}, {"ns", "n"}}}}},
      {"response_format", {{"type", "json_object"}, {"hint", "h"}}}};
  ChatRequest r = ok(body);
  REQUIRE(r.messages.size() == 3);
  CHECK(r.messages[0].content == "a");
  REQUIRE(r.messages[1].tool_calls.size() == 1);
  CHECK(r.messages[1].tool_calls[0].name == "f");
  CHECK(r.tools.size() == 1);
  CHECK(r.tool_choice.function == "f");
  CHECK(r.structured_output.has_value());
  // In the order the client wrote them (tools and tool_choice are read last), each by its full path.
  CHECK(r.ignored_fields == std::vector<std::string>{
                                "messages[0].content[0].cache", "messages[0].mood",
                                "messages[1].tool_calls[0].trace", "messages[1].tool_calls[0].function.x",
                                "response_format.hint", "tools[0].id", "tools[0].function.version",
                                "tool_choice.why", "tool_choice.function.ns"});
  // Strict: the first of them (in the order the parser reads them) is the 400.
  const ApiError e = err(body_with(body), kStrict);
  CHECK(e.param == "messages[0].content[0].cache");
  CHECK(e.message.find("messages[0].content[0].cache") != std::string::npos);
  CHECK(err_param({{"tools", body["tools"]}}, kStrict) == "tools[0].id");
  const Json plain_tools = Json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  CHECK(err_param({{"tools", plain_tools}, {"tool_choice", body["tool_choice"]}}, kStrict) == "tool_choice.why");
  CHECK(err_param({{"response_format", body["response_format"]}}, kStrict) == "response_format.hint");
  CHECK(err_param({{"messages", Json::array({user("q"), assistant, tool})}}, kStrict) ==
        "messages[1].tool_calls[0].trace");
}

TEST_CASE("chat: what the openai SDK echoes back is accepted by name, even when strict") {
  // ChatCompletionMessage.model_dump() of an answer, sent back as the next turn's history.
  const Json echoed = {{"role", "assistant"},
                       {"content", "Paris."},
                       {"refusal", nullptr},
                       {"annotations", Json::array({{{"type", "url_citation"},
                                                     {"url_citation", {{"url", "u"}, {"title", "t"}, {"start_index", 0}, {"end_index", 1}}}}})},
                       {"audio", nullptr},
                       {"function_call", nullptr},
                       {"tool_calls", nullptr}};
  const Json part = {{"type", "text"}, {"text", "And Rome?"}, {"prompt_cache_breakpoint", {{"mode", "explicit"}}}};
  ChatRequest r = ok({{"messages", Json::array({user("Capital of France?"), echoed, user(Json::array({part}))})}}, kStrict);
  REQUIRE(r.messages.size() == 3);
  CHECK(r.messages[1].content == "Paris.");
  CHECK(r.messages[2].content == "And Rome?");
  CHECK(r.ignored_fields == std::vector<std::string>{"messages[1].annotations", "messages[2].content[0].prompt_cache_breakpoint"});
  // What asks for a feature sluice lacks is refused by name, strict or not.
  CHECK(messages_err(Json::array({{{"role", "assistant"}, {"content", nullptr}, {"audio", {{"id", "a1"}}}}})) ==
        "messages[0].audio");
}
}  // namespace unit_proto_test_chat
