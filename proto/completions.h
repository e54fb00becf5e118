#pragma once
// POST /v1/completions: the body parsed and validated into a CompletionRequest, or
// the 400 that names the offending field. Every key is either understood or
// refused; none is silently ignored. Explicit nulls mean "default".
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proto/errors.h"
#include "proto/generation_options.h"

namespace sluice::proto {

// Bounds checked before anything is built from the prompts: a body of many small
// prompts must not turn into prompts x n engine requests first.
inline constexpr size_t kMaxPrompts = 256;             // entries of "prompt"
inline constexpr int64_t kMaxChoicesPerRequest = 256;  // prompts x n

// One prompt: text to tokenize, or token ids as given.
using Prompt = std::variant<std::string, std::vector<int32_t>>;

struct CompletionRequest : GenerationOptions {
  // "prompt": string | [string] | [id] | [[id]]; one entry per prompt, none empty.
  std::vector<Prompt> prompts;
  bool echo = false;  // prepend the prompt to the returned text
  // best_of >= n: generate best_of choices per prompt and return the n of highest
  // cumulative log-probability (OpenAI). 0: not asked (as n). Never with stream.
  int32_t best_of = 0;
  // sampling.max_tokens: 16 when absent (OpenAI), empty (up to the context) when null;
  // 0 only with echo (score the prompt, generate nothing).
  // sampling.logprobs: "logprobs" 0..20, the number of alternatives per token; with
  // echo, the prompt's tokens get them too.
};

using CompletionParse = std::variant<CompletionRequest, ApiError>;

CompletionParse parse_completion_request(std::string_view body, const ParseOptions& parse = {});
// The same, for a body already parsed (a JSON object).
CompletionParse parse_completion_json(const Json& body, const ParseOptions& parse = {});

}  // namespace sluice::proto
