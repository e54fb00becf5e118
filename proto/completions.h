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

// One prompt: text to tokenize, or token ids as given.
using Prompt = std::variant<std::string, std::vector<int32_t>>;

struct CompletionRequest : GenerationOptions {
  // "prompt": string | [string] | [id] | [[id]]; one entry per prompt, none empty.
  std::vector<Prompt> prompts;
  bool echo = false;  // prepend the prompt to the returned text
  // sampling.max_tokens: 16 when absent (OpenAI), empty (up to the context) when null.
  // sampling.logprobs: "logprobs" 0..20, the number of alternatives per token.
};

using CompletionParse = std::variant<CompletionRequest, ApiError>;

CompletionParse parse_completion_request(std::string_view body);
// The same, for a body already parsed (a JSON object).
CompletionParse parse_completion_json(const nlohmann::json& body);

}  // namespace sluice::proto
