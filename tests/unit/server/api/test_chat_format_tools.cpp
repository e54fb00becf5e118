// server/api/chat_format with a parser: tool calls and reasoning as the chat API
// reports them, streamed (OpenAI's tool-call deltas, reasoning deltas) and whole, and
// the two agree: the streamed deltas concatenate to the whole message.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/api/generation/chat_format.h"
#include "server/api/generation/generation_job.h"
#include "tests/unit/server/api/generation_events.h"

namespace sluice::server::unit_server_api_test_chat_format_tools {
namespace {

using engine::FinishReason;
using testing::delta;
using testing::finish;
using testing::make_stream;
using testing::sse_events;
using Json = nlohmann::ordered_json;

ChatOutputOptions tools_and_thinking() {
  ChatOutputOptions options;
  options.parse = true;
  options.reasoning = true;
  options.parser.tool_calls = chat::ToolCallSyntax::hermes;
  options.parser.reasoning = chat::ReasoningSyntax::think;
  return options;
}

const std::vector<std::string> kPieces = {
    "<think>", "\nThe user wants", " weather.\n", "</think>", "\n\n", "Checking.", "\n<tool_call>",
    "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": ", "\"Paris\"}}\n</tool_call>", "\n<tool_call>\n",
    "{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"};

// The job fed kPieces (one token each) then a stop.
Json run(bool streaming, ChatOutputOptions options, std::vector<Json>* events = nullptr) {
  GenerationJob job({.header = {"chatcmpl-t", 1700000000, "m"}, .include_usage = true},
                    std::make_unique<ChatFormat>(std::move(options)), testing::piece_of);
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 5);
  std::string sse = streaming ? job.open_stream() : "";
  int32_t token = 1;
  for (const std::string& piece : kPieces) {
    stream->push_delta(delta(0, piece, {token++}));
    sse += job.fold_waiting(streaming);
  }
  stream->push_finish(finish(0, FinishReason::stop, token - 1));
  sse += job.fold_waiting(streaming);
  REQUIRE(job.is_done());
  if (!streaming) return Json::parse(job.whole_body());
  sse += job.close_stream();
  *events = sse_events(sse);
  // Rebuild the message from the deltas, as a client does.
  Json message = {{"content", ""}, {"reasoning", ""}, {"tool_calls", Json::array()}};
  for (const Json& event : *events) {
    if (!event.is_object() || event["choices"].empty()) continue;
    const Json& d = event["choices"][0]["delta"];
    if (d.contains("content")) message["content"] = message["content"].get<std::string>() + d["content"].get<std::string>();
    if (d.contains("reasoning")) {
      CHECK(d["reasoning"] == d["reasoning_content"]);
      message["reasoning"] = message["reasoning"].get<std::string>() + d["reasoning"].get<std::string>();
    }
    if (d.contains("tool_calls")) {
      for (const Json& call : d["tool_calls"]) {
        const size_t index = call["index"].get<size_t>();
        if (call.contains("id")) {
          REQUIRE(index == message["tool_calls"].size());  // a call's first delta names it
          CHECK(call["type"] == "function");
          message["tool_calls"].push_back({{"name", call["function"]["name"]}, {"arguments", ""}});
        }
        REQUIRE(index < message["tool_calls"].size());
        Json& target = message["tool_calls"][index];
        target["arguments"] = target["arguments"].get<std::string>() + call["function"]["arguments"].get<std::string>();
      }
    }
  }
  return message;
}

}  // namespace

TEST_CASE("chat format tools: a whole answer has reasoning, content, tool_calls and finish_reason tool_calls") {
  const Json body = run(false, tools_and_thinking());
  const Json& choice = body["choices"][0];
  CHECK(choice["finish_reason"] == "tool_calls");
  const Json& message = choice["message"];
  CHECK(message["content"] == "Checking.");
  CHECK(message["reasoning_content"] == "The user wants weather.");
  CHECK(message["reasoning"] == "The user wants weather.");
  REQUIRE(message["tool_calls"].size() == 2);
  CHECK(message["tool_calls"][0]["id"].get<std::string>().starts_with("call_"));
  CHECK(message["tool_calls"][0]["id"] != message["tool_calls"][1]["id"]);
  CHECK(message["tool_calls"][0]["type"] == "function");
  CHECK(message["tool_calls"][0]["function"]["name"] == "get_weather");
  CHECK(message["tool_calls"][0]["function"]["arguments"] == "{\"city\": \"Paris\"}");
  CHECK(message["tool_calls"][1]["function"]["name"] == "get_time");
  CHECK(message["tool_calls"][1]["function"]["arguments"] == "{}");
  // The tokens that began inside <think>...</think>: "<think>" .. "</think>".
  CHECK(body["usage"]["completion_tokens_details"]["reasoning_tokens"] == 3);
}

TEST_CASE("chat format tools: the streamed deltas add up to the whole message, markup never in content") {
  std::vector<Json> events;
  const Json streamed = run(true, tools_and_thinking(), &events);
  const Json whole = run(false, tools_and_thinking())["choices"][0]["message"];
  CHECK(streamed["content"] == whole["content"]);
  CHECK(streamed["reasoning"] == whole["reasoning"]);
  REQUIRE(streamed["tool_calls"].size() == whole["tool_calls"].size());
  for (size_t i = 0; i < whole["tool_calls"].size(); ++i) {
    CHECK(streamed["tool_calls"][i]["name"] == whole["tool_calls"][i]["function"]["name"]);
    CHECK(streamed["tool_calls"][i]["arguments"] == whole["tool_calls"][i]["function"]["arguments"]);
  }
  CHECK(streamed["content"].get<std::string>().find("tool_call") == std::string::npos);
  // The finish chunk says tool_calls; the usage chunk counts the reasoning tokens.
  bool finished = false;
  for (const Json& event : events) {
    if (event.is_object() && !event["choices"].empty() && !event["choices"][0]["finish_reason"].is_null()) {
      CHECK(event["choices"][0]["finish_reason"] == "tool_calls");
      finished = true;
    }
  }
  CHECK(finished);
  REQUIRE(events.size() >= 2);
  CHECK(events[events.size() - 2]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 3);
}

TEST_CASE("chat format tools: include_reasoning false drops the reasoning, a stop without calls stays stop") {
  ChatOutputOptions options = tools_and_thinking();
  options.include_reasoning = false;
  const Json body = run(false, options);
  CHECK_FALSE(body["choices"][0]["message"].contains("reasoning_content"));
  std::vector<Json> events;
  const Json streamed = run(true, options, &events);
  CHECK(streamed["reasoning"] == "");

  GenerationJob job({.header = {"chatcmpl-t", 1, "m"}}, std::make_unique<ChatFormat>(tools_and_thinking()),
                    testing::piece_of);
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 1);
  stream->push_delta(delta(0, "Just text.", {1}));
  stream->push_finish(finish(0, FinishReason::stop, 1));
  job.fold_waiting(false);
  const Json plain = Json::parse(job.whole_body());
  CHECK(plain["choices"][0]["finish_reason"] == "stop");
  CHECK(plain["choices"][0]["message"]["content"] == "Just text.");
  CHECK_FALSE(plain["choices"][0]["message"].contains("tool_calls"));
}

}  // namespace sluice::server
