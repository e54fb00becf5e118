#pragma once
// /v1/chat/completions as a ResponseFormat: assistant messages, logprobs as
// "content" entries. A stream opens with each choice's role chunk, then its content
// chunks and its finish chunk. Content is the generated text as it comes; a parser
// of that text (tool calls, reasoning) would keep its per-choice state here.
#include "server/api/response_format.h"

namespace sluice::server {

class ChatFormat : public ResponseFormat {
 public:
  std::string open_stream(GenerationJob& job) override;
  std::string delta_event(GenerationJob& job, int32_t index, const std::string& text,
                          std::vector<proto::TokenLogprob> logprobs) override;
  std::string finish_event(GenerationJob& job, int32_t index) override;
  std::string close_stream(GenerationJob& job) override;
  std::string whole_body(GenerationJob& job) override;
};

}  // namespace sluice::server
