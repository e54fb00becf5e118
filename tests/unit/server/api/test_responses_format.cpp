// server/api/responses_format: the Responses API's response object and its named
// SSE events: items opened and closed in order, sequence numbers increasing, the
// streamed deltas adding up to the whole object's items, incomplete on max tokens.
#include "server/api/responses/responses_format.h"

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/api/generation/generation_job.h"
#include "tests/unit/server/api/generation_events.h"

namespace sluice::server::unit_server_api_test_responses_format {
namespace {

using engine::FinishReason;
using testing::delta;
using testing::finish;
using testing::make_stream;
using Json = nlohmann::ordered_json;

struct NamedEvent {
  std::string name;
  Json data;
};

// "event: NAME\ndata: {...}\n\n" events; the name must match the data's type.
std::vector<NamedEvent> named_events(const std::string& sse) {
  std::vector<NamedEvent> out;
  size_t at = 0;
  while (at < sse.size()) {
    const size_t end = sse.find("\n\n", at);
    REQUIRE(end != std::string::npos);
    const std::string event = sse.substr(at, end - at);
    REQUIRE(event.rfind("event: ", 0) == 0);
    const size_t line = event.find('\n');
    REQUIRE(line != std::string::npos);
    REQUIRE(event.compare(line + 1, 6, "data: ") == 0);
    NamedEvent named{event.substr(7, line - 7), Json::parse(event.substr(line + 7))};
    CHECK(named.data["type"] == named.name);
    out.push_back(std::move(named));
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

const Json kEcho = {{"instructions", "Be brief."}, {"store", true}, {"tools", Json::array()}, {"tool_choice", "auto"}};

const std::vector<std::string> kPieces = {
    "<think>", "\nThe user wants", " weather.\n", "</think>", "\n\n", "Checking.", "\n<tool_call>",
    "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": ", "\"Paris\"}}\n</tool_call>"};

struct Run {
  Json whole;                     // whole_body, or the final event's response
  std::vector<NamedEvent> events; // streaming
};

Run run(bool streaming, ChatOutputOptions options, const std::vector<std::string>& pieces,
        FinishReason reason = FinishReason::stop) {
  JobSettings settings;
  settings.header = {"resp_1", 1700000000, "m"};
  auto owned = std::make_unique<ResponsesFormat>(std::move(options), kEcho, streaming);
  GenerationJob job(std::move(settings), std::move(owned), testing::piece_of);
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 7);
  Run out;
  std::string sse = streaming ? job.open_stream() : "";
  for (size_t i = 0; i < pieces.size(); ++i) stream->push_delta(delta(0, pieces[i], {static_cast<int32_t>(i)}));
  stream->push_finish(finish(0, reason, static_cast<int64_t>(pieces.size())));
  sse += job.fold_waiting(streaming);
  REQUIRE(job.is_done());
  if (streaming) {
    sse += job.close_stream();
    out.events = named_events(sse);
    REQUIRE(!out.events.empty());
    out.whole = out.events.back().data["response"];
  } else {
    out.whole = Json::parse(job.whole_body());
  }
  return out;
}

}  // namespace

TEST_CASE("responses format: whole body with reasoning, a message and a function call") {
  const Json r = run(false, tools_and_thinking(), kPieces).whole;
  CHECK(r["id"] == "resp_1");
  CHECK(r["object"] == "response");
  CHECK(r["created_at"] == 1700000000);
  CHECK(r["status"] == "completed");
  CHECK(r["incomplete_details"].is_null());
  CHECK(r["model"] == "m");
  CHECK(r["instructions"] == "Be brief.");
  REQUIRE(r["output"].size() == 3);
  const Json& reasoning = r["output"][0];
  CHECK(reasoning["type"] == "reasoning");
  CHECK(reasoning["id"].get<std::string>().starts_with("rs_"));
  CHECK(reasoning["summary"] == Json::array());
  CHECK(reasoning["content"][0] == Json{{"type", "reasoning_text"}, {"text", "The user wants weather."}});
  const Json& message = r["output"][1];
  CHECK(message["type"] == "message");
  CHECK(message["id"].get<std::string>().starts_with("msg_"));
  CHECK(message["role"] == "assistant");
  CHECK(message["status"] == "completed");
  CHECK(message["content"][0]["type"] == "output_text");
  CHECK(message["content"][0]["text"] == "Checking.");
  CHECK(message["content"][0]["annotations"] == Json::array());
  const Json& call = r["output"][2];
  CHECK(call["type"] == "function_call");
  CHECK(call["id"].get<std::string>().starts_with("fc_"));
  CHECK(call["call_id"].get<std::string>().starts_with("call_"));
  CHECK(call["name"] == "get_weather");
  CHECK(call["arguments"] == "{\"city\": \"Paris\"}");
  CHECK(call["status"] == "completed");
  CHECK(r["usage"]["input_tokens"] == 7);
  CHECK(r["usage"]["output_tokens"] == 9);
  CHECK(r["usage"]["total_tokens"] == 16);
  CHECK(r["usage"]["output_tokens_details"]["reasoning_tokens"] == 3);
  CHECK(r["usage"]["input_tokens_details"]["cached_tokens"] == 0);
}

TEST_CASE("responses format: the stream's events come in the SDK's order and add up to the whole response") {
  const Run streamed = run(true, tools_and_thinking(), kPieces);
  const Json whole = run(false, tools_and_thinking(), kPieces).whole;
  const auto& events = streamed.events;
  for (size_t i = 0; i < events.size(); ++i) CHECK(events[i].data["sequence_number"] == static_cast<int64_t>(i));
  REQUIRE(events.size() >= 4);
  CHECK(events[0].name == "response.created");
  CHECK(events[0].data["response"]["status"] == "in_progress");
  CHECK(events[0].data["response"]["output"] == Json::array());
  CHECK(events[1].name == "response.in_progress");
  CHECK(events.back().name == "response.completed");
  // Each item: added, (part added), deltas, done events, output_item.done; then the next.
  std::vector<std::string> names;
  for (const auto& e : events) {
    if (names.empty() || names.back() != e.name) names.push_back(e.name);
  }
  const std::vector<std::string> expected = {
      "response.created", "response.in_progress",
      "response.output_item.added", "response.content_part.added", "response.reasoning_text.delta",
      "response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta",
      "response.function_call_arguments.done", "response.output_item.done", "response.completed"};
  CHECK(names == expected);
  // The deltas rebuild the items; the done items equal the final output's.
  std::string text, arguments;
  std::vector<Json> done_items;
  for (const auto& e : events) {
    if (e.name == "response.output_text.delta") text += e.data["delta"].get<std::string>();
    if (e.name == "response.function_call_arguments.delta") arguments += e.data["delta"].get<std::string>();
    if (e.name == "response.output_item.done") done_items.push_back(e.data["item"]);
  }
  CHECK(text == "Checking.");
  CHECK(arguments == "{\"city\": \"Paris\"}");
  const Json& final_output = streamed.whole["output"];
  REQUIRE(final_output.size() == 3);
  for (size_t i = 0; i < 3; ++i) CHECK(done_items[i] == final_output[i]);
  // Same shape as the whole body (ids are fresh per response).
  for (size_t i = 0; i < 3; ++i) CHECK(final_output[i]["type"] == whole["output"][i]["type"]);
  CHECK(streamed.whole["usage"] == whole["usage"]);
}

TEST_CASE("responses format: max tokens makes the response incomplete") {
  const Run whole = run(false, {}, {"Hello", " there"}, FinishReason::length);
  CHECK(whole.whole["status"] == "incomplete");
  CHECK(whole.whole["incomplete_details"] == Json{{"reason", "max_output_tokens"}});
  CHECK(whole.whole["output"][0]["status"] == "incomplete");
  CHECK(whole.whole["output"][0]["content"][0]["text"] == "Hello there");
  const Run streamed = run(true, {}, {"Hello", " there"}, FinishReason::length);
  CHECK(streamed.events.back().name == "response.incomplete");
  CHECK(streamed.whole["status"] == "incomplete");
}

TEST_CASE("responses format: the output as chat messages, for a later previous_response_id") {
  JobSettings settings;
  settings.header = {"resp_2", 1, "m"};
  auto owned = std::make_unique<ResponsesFormat>(tools_and_thinking(), kEcho, false);
  const ResponsesFormat& format = *owned;
  GenerationJob job(std::move(settings), std::move(owned), testing::piece_of);
  auto stream = make_stream("r-0", 1);
  job.add_part(stream, 1);
  for (const std::string& piece : kPieces) stream->push_delta(delta(0, piece, {1}));
  stream->push_finish(finish(0, FinishReason::stop, 9));
  job.fold_waiting(false);
  CHECK_FALSE(format.is_finished());
  job.whole_body();
  CHECK(format.is_finished());
  const Json messages = format.output_messages();
  REQUIRE(messages.size() == 1);
  CHECK(messages[0]["role"] == "assistant");
  CHECK(messages[0]["content"] == "Checking.");
  REQUIRE(messages[0]["tool_calls"].size() == 1);
  CHECK(messages[0]["tool_calls"][0]["id"] == format.final_response()["output"][2]["call_id"]);
  CHECK(messages[0]["tool_calls"][0]["function"]["name"] == "get_weather");
}

}  // namespace sluice::server
