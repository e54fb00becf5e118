#pragma once
// /v1/completions as a ResponseFormat: text choices, logprobs as the four parallel
// arrays with text offsets, echo (the prompt before the text, with its scored
// tokens when logprobs are asked for) and best_of (the n choices of highest
// cumulative log-probability of each prompt, best first).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/api/generation/response_format.h"

namespace sluice::server {

// What a completions part echoes: its prompt, when the request has echo.
struct EchoedPrompt {
  std::string text;  // "" without echo
  // Echo with logprobs: the piece of the prompt's first token, whose entry (logprob
  // null: nothing comes before it) opens the prompt's scored entries.
  std::optional<std::string> first_piece;
};

class CompletionsFormat : public ResponseFormat {
 public:
  // `prompts`: one per part, in the order the job adds them. `num_returned`: n, the
  // choices per prompt in the answer (best_of generates more of them).
  CompletionsFormat(std::vector<EchoedPrompt> prompts, int32_t num_returned);

  std::string open_stream(GenerationJob& job) override;
  std::string prompt_scored(GenerationJob& job, size_t part, std::vector<proto::TokenLogprob> entries,
                            bool streaming) override;
  std::string delta_event(GenerationJob& job, int32_t index, const std::string& text,
                          std::vector<proto::TokenLogprob> logprobs) override;
  std::string finish_event(GenerationJob& job, int32_t index) override;
  std::string close_stream(GenerationJob& job) override;
  std::string whole_body(GenerationJob& job) override;

 private:
  struct Echo {
    std::string text;
    std::vector<proto::TokenLogprob> prompt_logprobs;  // the prompt's scored entries so far
    bool is_sent = false;                              // streaming: its chunks are out
  };

  std::string echo_chunks(GenerationJob& job, size_t part);

  std::vector<Echo> echoes_;  // one per part
  int32_t num_returned_ = 1;
};

}  // namespace sluice::server
