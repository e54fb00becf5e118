#pragma once
// How many log-probability entries one generation response could hold, estimated
// before any work from what the request asks for, and the 400 when that is more than
// max_response_logprobs. Every returned choice of an echoed, scored prompt repeats
// the prompt's entries: 2 prompts of 6,000 tokens with n 16 and logprobs 20 is
// 4 million entries, a 117 MB answer from a 74 KB body.
#include <cstdint>
#include <optional>
#include <span>

#include "engine/request.h"
#include "proto/errors.h"

namespace sluice::server {

struct ResponseShape {
  bool chat = false;          // names top_logprobs instead of logprobs
  bool streaming = false;     // generated entries leave as they come: only the echoed prompt's count
  bool want_logprobs = false; // the client asked for logprobs (best_of alone asks the engine for them)
  bool score_only = false;    // max_tokens 0 with echo: no generated entries shown
  int32_t num_returned = 1;   // choices per prompt in the answer (n; best_of generates more)
};

// Entries per token: the chosen token and its alternatives.
int64_t estimate_response_logprobs(std::span<const engine::GenerationRequest> requests, const ResponseShape& shape,
                                   int64_t max_model_len);

// The 400 naming logprobs (chat: top_logprobs) when the estimate exceeds `limit`.
std::optional<proto::ApiError> check_response_logprobs(std::span<const engine::GenerationRequest> requests,
                                                       const ResponseShape& shape, int64_t max_model_len,
                                                       int64_t limit);

}  // namespace sluice::server
