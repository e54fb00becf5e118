// server/api/messages_format: the Anthropic message object and event stream made of
// engine events: thinking, text and tool_use blocks, stop_reason (end_turn,
// max_tokens, stop_sequence, tool_use), usage; and the stream rebuilt as the SDK
// does it equals the whole message.
#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/api/generation/generation_job.h"
#include "server/api/anthropic/messages_format.h"
#include "tests/unit/server/api/generation_events.h"

namespace sluice::server::unit_server_api_test_messages_format {
namespace {

using engine::FinishReason;
using testing::delta;
using testing::finish;
using testing::make_stream;
using Json = nlohmann::ordered_json;

struct Event {
  std::string name;
  Json data;
};

// "event: NAME\ndata: JSON\n\n" events, each checked to be one of that shape.
std::vector<Event> named_events(const std::string& sse) {
  std::vector<Event> out;
  size_t at = 0;
  while (at < sse.size()) {
    const size_t end = sse.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const std::string event = sse.substr(at, end - at);
    REQUIRE(event.rfind("event: ", 0) == 0);
    const size_t newline = event.find('\n');
    REQUIRE(newline != std::string::npos);
    REQUIRE(event.compare(newline + 1, 6, "data: ") == 0);
    Event e{event.substr(7, newline - 7), Json::parse(event.substr(newline + 7))};
    CHECK(e.data["type"] == e.name);  // Anthropic repeats the name as the type
    out.push_back(std::move(e));
    at = end + 2;
  }
  return out;
}

ChatOutputOptions tools_and_thinking() {
  ChatOutputOptions options;
  options.parse = true;
  options.reasoning = true;
  options.parser.tool_calls = chat::ToolCallSyntax::hermes;
  options.parser.reasoning = chat::ReasoningSyntax::think;
  return options;
}

const std::vector<std::string> kToolPieces = {
    "<think>", "\nThe user wants", " weather.\n", "</think>", "\n\n", "Checking.", "\n<tool_call>",
    "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": ", "\"Paris\"}}\n</tool_call>"};

struct Run {
  Json whole;                 // not streaming: the body
  std::vector<Event> events;  // streaming
};

Run run(bool streaming, ChatOutputOptions options, const std::vector<std::string>& pieces,
        engine::ChoiceFinish end) {
  GenerationJob job({.header = {"msg_t", 1700000000, "m"}}, std::make_unique<MessagesFormat>(std::move(options)),
                    testing::piece_of);
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 7);
  std::string sse = streaming ? job.open_stream() : "";
  int32_t token = 1;
  for (const std::string& piece : pieces) {
    stream->push_delta(delta(0, piece, {token++}));
    sse += job.fold_waiting(streaming);
  }
  end.num_completion_tokens = token - 1;
  stream->push_finish(end);
  sse += job.fold_waiting(streaming);
  REQUIRE(job.is_done());
  if (!streaming) return {Json::parse(job.whole_body()), {}};
  sse += job.close_stream();
  return {{}, named_events(sse)};
}

// The message rebuilt from the events, as the SDK's accumulator does.
Json rebuild(const std::vector<Event>& events) {
  REQUIRE(events.size() >= 3);
  CHECK(events.front().name == "message_start");
  CHECK(events[1].name == "ping");
  CHECK(events.back().name == "message_stop");
  Json message = events.front().data["message"];
  std::vector<std::string> json_bufs;
  int open = -1;
  for (const Event& e : events) {
    if (e.name == "content_block_start") {
      REQUIRE(open == -1);  // blocks never overlap
      open = e.data["index"].get<int>();
      REQUIRE(static_cast<size_t>(open) == message["content"].size());
      message["content"].push_back(e.data["content_block"]);
      json_bufs.emplace_back();
    } else if (e.name == "content_block_delta") {
      REQUIRE(e.data["index"] == open);
      Json& block = message["content"][static_cast<size_t>(open)];
      const Json& d = e.data["delta"];
      if (d["type"] == "text_delta") block["text"] = block["text"].get<std::string>() + d["text"].get<std::string>();
      if (d["type"] == "thinking_delta")
        block["thinking"] = block["thinking"].get<std::string>() + d["thinking"].get<std::string>();
      if (d["type"] == "input_json_delta") json_bufs[static_cast<size_t>(open)] += d["partial_json"].get<std::string>();
    } else if (e.name == "content_block_stop") {
      REQUIRE(e.data["index"] == open);
      Json& block = message["content"][static_cast<size_t>(open)];
      if (block["type"] == "tool_use") block["input"] = Json::parse(json_bufs[static_cast<size_t>(open)]);
      open = -1;
    } else if (e.name == "message_delta") {
      message["stop_reason"] = e.data["delta"]["stop_reason"];
      message["stop_sequence"] = e.data["delta"]["stop_sequence"];
      message["usage"]["output_tokens"] = e.data["usage"]["output_tokens"];
    }
  }
  CHECK(open == -1);
  return message;
}

// Ids are random: equal shapes compare without them.
Json without_ids(Json message) {
  for (Json& block : message["content"])
    if (block.contains("id")) block["id"] = "";
  return message;
}

}  // namespace

TEST_CASE("messages format: thinking, text and a tool call, whole") {
  const Json body = run(false, tools_and_thinking(), kToolPieces, finish(0, FinishReason::stop, 0)).whole;
  CHECK(body["id"] == "msg_t");
  CHECK(body["type"] == "message");
  CHECK(body["role"] == "assistant");
  CHECK(body["model"] == "m");
  REQUIRE(body["content"].size() == 3);
  CHECK(body["content"][0]["type"] == "thinking");
  CHECK(body["content"][0]["thinking"] == "The user wants weather.");
  CHECK(body["content"][1] == Json{{"type", "text"}, {"text", "Checking."}});
  const Json& call = body["content"][2];
  CHECK(call["type"] == "tool_use");
  CHECK(call["id"].get<std::string>().starts_with("toolu_"));
  CHECK(call["name"] == "get_weather");
  CHECK(call["input"] == Json{{"city", "Paris"}});
  CHECK(body["stop_reason"] == "tool_use");
  CHECK(body["stop_sequence"].is_null());
  CHECK(body["usage"] == Json{{"input_tokens", 7}, {"output_tokens", kToolPieces.size()}});
}

TEST_CASE("messages format: the stream rebuilds into the whole message") {
  const Json whole = run(false, tools_and_thinking(), kToolPieces, finish(0, FinishReason::stop, 0)).whole;
  const Run streamed = run(true, tools_and_thinking(), kToolPieces, finish(0, FinishReason::stop, 0));
  const Json& start = streamed.events.front().data["message"];
  CHECK(start["content"].empty());
  CHECK(start["stop_reason"].is_null());
  CHECK(start["usage"]["input_tokens"] == 7);
  CHECK(without_ids(rebuild(streamed.events)) == without_ids(whole));
  bool saw_json_delta = false;
  for (const Event& e : streamed.events)
    saw_json_delta |= e.name == "content_block_delta" && e.data["delta"]["type"] == "input_json_delta";
  CHECK(saw_json_delta);
}

TEST_CASE("messages format: stop reasons") {
  const std::vector<std::string> text = {"Hello", " there"};
  CHECK(run(false, {}, text, finish(0, FinishReason::stop, 0)).whole["stop_reason"] == "end_turn");
  CHECK(run(false, {}, text, finish(0, FinishReason::length, 0)).whole["stop_reason"] == "max_tokens");
  engine::ChoiceFinish stopped = finish(0, FinishReason::stop, 0);
  stopped.matched_stop = "END";
  const Json body = run(false, {}, text, stopped).whole;
  CHECK(body["stop_reason"] == "stop_sequence");
  CHECK(body["stop_sequence"] == "END");
  CHECK(body["content"] == Json::array({{{"type", "text"}, {"text", "Hello there"}}}));
  const Json rebuilt = rebuild(run(true, {}, text, stopped).events);
  CHECK(rebuilt["stop_reason"] == "stop_sequence");
  CHECK(rebuilt["stop_sequence"] == "END");
  CHECK(rebuilt["content"] == body["content"]);
}

TEST_CASE("messages format: an empty answer has no blocks; errors are Anthropic events") {
  const Run streamed = run(true, {}, {}, finish(0, FinishReason::stop, 0));
  CHECK(rebuild(streamed.events)["content"].empty());
  MessagesFormat format;
  const std::vector<Event> error = named_events(format.error_event(proto::internal_error("r1")));
  REQUIRE(error.size() == 1);
  CHECK(error[0].data["error"]["type"] == "api_error");
}

}  // namespace sluice::server
