#pragma once
// /v1/chat/completions as a ResponseFormat: assistant messages, logprobs as
// "content" entries. A stream opens with each choice's role chunk, then its delta
// chunks and its finish chunk.
//
// With tools or a reasoning model, each choice's text goes through an OutputParser
// (engine/chat/output_parser.h): reasoning becomes reasoning_content / reasoning,
// tool-call markup becomes tool_calls (streamed as OpenAI's tool-call deltas: the
// first with index, id, type and name, then argument pieces), and only the answer is
// content. A choice that called a tool and stopped ends with "tool_calls".
#include <memory>
#include <vector>

#include "engine/chat/output_parser.h"
#include "server/api/generation/response_format.h"

namespace sluice::server {

struct ChatOutputOptions {
  bool parse = false;  // run the parser (tools asked for, or a reasoning model)
  chat::OutputParserOptions parser;
  bool reasoning = false;          // the model reasons: report reasoning fields and tokens
  bool include_reasoning = true;   // vLLM's include_reasoning: false drops the reasoning text
};

class ChatFormat : public ResponseFormat {
 public:
  explicit ChatFormat(ChatOutputOptions options = {}) : options_(std::move(options)) {}

  std::string open_stream(GenerationJob& job) override;
  void text_folded(GenerationJob& job, int32_t index, const std::string& text, int64_t num_tokens) override;
  std::string delta_event(GenerationJob& job, int32_t index, const std::string& text,
                          std::vector<proto::TokenLogprob> logprobs) override;
  std::string finish_event(GenerationJob& job, int32_t index) override;
  std::string close_stream(GenerationJob& job) override;
  std::string whole_body(GenerationJob& job) override;

 private:
  struct ChoiceParse {
    explicit ChoiceParse(const chat::OutputParserOptions& options) : parser(options) {}
    chat::OutputParser parser;
    std::vector<chat::OutputEvent> pending;  // streaming: settled, not sent yet
    std::vector<std::string> call_ids;
    int64_t reasoning_tokens = 0;
    bool finished = false;
  };
  ChoiceParse& parse_of(GenerationJob& job, int32_t index);
  void finish_parse(ChoiceParse& parse, bool streaming);
  // The pending events as chunks (logprobs ride on the first).
  std::string drain(GenerationJob& job, int32_t index, ChoiceParse& parse,
                    std::vector<proto::TokenLogprob> logprobs);
  std::string wire_finish_reason(GenerationJob& job, int32_t index);
  proto::Usage usage(const GenerationJob& job) const;

  ChatOutputOptions options_;
  std::vector<std::unique_ptr<ChoiceParse>> parses_;  // by choice index, made on first use
};

}  // namespace sluice::server
