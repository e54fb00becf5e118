#pragma once
// /v1/messages (the Anthropic Messages API) as a ResponseFormat: one assistant
// message whose content is a list of blocks: thinking (a reasoning model's
// reasoning), text, and tool_use ({id "toolu_...", name, input object}); stop_reason
// end_turn | max_tokens | stop_sequence (with the matched stop_sequence) | tool_use.
// The text goes through the OutputParser as ChatFormat's does (chat_format.h).
//
// A stream is Anthropic's named events: message_start, ping, then per block
// content_block_start, content_block_delta (text_delta, thinking_delta,
// input_json_delta with partial_json), content_block_stop; then message_delta
// (stop_reason, stop_sequence, usage.output_tokens) and message_stop. One choice only
// (the API has no `n`).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/chat/output_parser.h"
#include "server/api/generation/chat_format.h"
#include "server/api/generation/response_format.h"

namespace sluice::server {

class MessagesFormat : public ResponseFormat {
 public:
  explicit MessagesFormat(ChatOutputOptions options = {});

  std::string open_stream(GenerationJob& job) override;
  void text_folded(GenerationJob& job, int32_t index, const std::string& text, int64_t num_tokens) override;
  std::string delta_event(GenerationJob& job, int32_t index, const std::string& text,
                          std::vector<proto::TokenLogprob> logprobs) override;
  std::string finish_event(GenerationJob& job, int32_t index) override;
  std::string close_stream(GenerationJob& job) override;
  std::string error_event(const proto::ApiError& error) override;
  std::string whole_body(GenerationJob& job) override;

 private:
  enum class Block { none, text, thinking, tool_use };
  // The pending parser events as stream events: blocks opened, filled and closed.
  std::string drain();
  std::string open_block(Block kind, nlohmann::ordered_json block);
  std::string close_block();
  struct StopReason {
    std::string reason;
    std::optional<std::string> sequence;
  };
  StopReason stop_reason(const GenerationJob& job) const;

  ChatOutputOptions options_;
  chat::OutputParser parser_;
  std::vector<chat::OutputEvent> pending_;  // streaming: settled, not sent yet
  bool finished_ = false;
  Block open_ = Block::none;
  int32_t block_index_ = -1;  // the open (or last) block's index
};

// "msg_" + 32 hex digits; "toolu_" + 24 hex digits.
std::string new_message_id();
std::string new_tool_use_id();

}  // namespace sluice::server
