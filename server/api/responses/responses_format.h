#pragma once
// /v1/responses as a ResponseFormat: one response object whose `output` holds items
// (reasoning, message with output_text, function_call), or, streaming, the named
// SSE events the OpenAI SDK folds into that object: response.created,
// response.in_progress, then per item output_item.added, its content part, its text
// / arguments deltas and the .done events, and last response.completed (or
// response.incomplete), each with an increasing sequence_number.
//
// The text goes through the same OutputParser as chat (engine/chat/output_parser.h):
// reasoning becomes a reasoning item, tool-call markup function_call items, the rest
// a message item. One choice only (the Responses API has no `n`).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/output_parser.h"
#include "server/api/generation/chat_format.h"
#include "server/api/generation/response_format.h"

namespace sluice::server {

std::string new_response_id();  // "resp_" + 32 hex digits

class ResponsesFormat : public ResponseFormat {
 public:
  // `echo`: the request fields the response object repeats (proto::ResponsesRequest::echo).
  ResponsesFormat(ChatOutputOptions output, nlohmann::ordered_json echo, bool streaming);

  std::string open_stream(GenerationJob& job) override;
  void text_folded(GenerationJob& job, int32_t index, const std::string& text, int64_t num_tokens) override;
  std::string delta_event(GenerationJob& job, int32_t index, const std::string& text,
                          std::vector<proto::TokenLogprob> logprobs) override;
  std::string finish_event(GenerationJob& job, int32_t index) override;
  std::string close_stream(GenerationJob& job) override;
  std::string error_event(const proto::ApiError& error) override;
  std::string whole_body(GenerationJob& job) override;

  // Once the response ended (whole body made or stream closed): the response object,
  // and its output as chat messages (what a later previous_response_id continues).
  bool is_finished() const { return finished_; }
  const nlohmann::ordered_json& final_response() const { return final_; }
  nlohmann::ordered_json output_messages() const;

 private:
  struct Item {
    enum class Kind { reasoning, message, function_call };
    Kind kind = Kind::message;
    std::string id;
    std::string text;  // reasoning text, message text or call arguments
    std::string name;  // function_call
    std::string call_id;
    std::string status = "in_progress";
  };

  std::string apply(const chat::OutputEvent& event);
  std::string open_item(Item item);
  std::string close_open_item(const std::string& status);
  std::string event(const char* type, nlohmann::ordered_json data);
  nlohmann::ordered_json item_json(const Item& item) const;
  nlohmann::ordered_json response_json(const GenerationJob& job, const std::string& status) const;
  // The end of the output: what the parser held back, the last item closed, the
  // final object built. Returns the events it makes; runs once.
  std::string settle(GenerationJob& job);

  ChatOutputOptions options_;
  nlohmann::ordered_json echo_;
  bool streaming_;
  chat::OutputParser parser_;
  std::vector<Item> items_;
  bool item_open_ = false;  // the last item still takes text
  std::string pending_;     // streaming: events made by text_folded, sent by delta_event
  int64_t sequence_ = 0;
  int64_t reasoning_tokens_ = 0;
  bool settled_ = false;
  bool finished_ = false;
  nlohmann::ordered_json final_;
};

}  // namespace sluice::server
