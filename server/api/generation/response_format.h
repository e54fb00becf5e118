#pragma once
// What one wire API makes of a generation: the interface a GenerationJob renders
// through. The job folds the engine's events into per-choice tallies (text, tokens,
// logprobs, finish, usage) the same way for every API; a ResponseFormat turns that
// fold into the API's own bytes: streamed events as they happen, or one body at the
// end. /v1/completions (completions_format.h) and /v1/chat/completions
// (chat_format.h) are the two today; an API with other events (named SSE events,
// structured deltas) is one more implementation, and per-choice streaming state (a
// tool-call or reasoning parser) lives in its format.
//
// Called by the job only, on the job's thread; a format belongs to one job.
#include <cstdint>
#include <string>
#include <vector>

#include "proto/errors.h"
#include "proto/responses.h"
#include "proto/sse.h"

namespace sluice::server {

class GenerationJob;

class ResponseFormat {
 public:
  virtual ~ResponseFormat() = default;

  // --- streaming ---
  // What the stream opens with, before any engine event.
  virtual std::string open_stream(GenerationJob& job) = 0;
  // The engine scored more of part `part`'s prompt (asked for with prompt_logprobs),
  // in order, as wire entries; returns what the stream sends for it ("" when not streaming).
  virtual std::string prompt_scored(GenerationJob& /*job*/, size_t /*part*/,
                                    std::vector<proto::TokenLogprob> /*entries*/, bool /*streaming*/) {
    return {};
  }
  // Every delta of choice `index`, streaming or not, before delta_event: its text
  // and how many tokens made it (a format that parses the text keeps its state here).
  virtual void text_folded(GenerationJob& /*job*/, int32_t /*index*/, const std::string& /*text*/,
                           int64_t /*num_tokens*/) {}
  // New text (and, when the client asked, its tokens' logprobs) of choice `index`;
  // never both empty. The job counts the text as sent afterwards.
  virtual std::string delta_event(GenerationJob& job, int32_t index, const std::string& text,
                                  std::vector<proto::TokenLogprob> logprobs) = 0;
  // Choice `index` finished (never with "error": a failed choice fails the response).
  virtual std::string finish_event(GenerationJob& job, int32_t index) = 0;
  // After every choice finished: the usage (when asked for) and the end marker.
  virtual std::string close_stream(GenerationJob& job) = 0;
  // The stream's last event when a choice failed.
  virtual std::string error_event(const proto::ApiError& error) { return proto::sse_error(error); }

  // --- whole ---
  // The JSON body once every choice finished without failing.
  virtual std::string whole_body(GenerationJob& job) = 0;
};

}  // namespace sluice::server
