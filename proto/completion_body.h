#pragma once
// /v1/completions bodies written straight to text, for the answers that can be
// large: every choice of an echoed, scored prompt starts its logprobs with the same
// prompt entries. Built as JSON trees, 16 choices of a 6,000-token prompt at
// logprobs 20 were 16 copies of ~130,000 nodes per prompt (peak RSS +835 MiB for a
// 117 MB answer); here the prompt's entries are rendered once (LogprobsText) and
// copied into each choice as text. The output is what completion_object /
// completion_chunk and dump_json give for the same input.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "proto/responses.h"

namespace sluice::proto {

// Log-probability entries as the bodies of the four arrays of a completions
// "logprobs" object, comma-separated without brackets.
struct LogprobsText {
  std::string tokens, token_logprobs, top_logprobs, text_offset;
  int64_t num_entries = 0;
  int64_t end_offset = 0;  // the text_offset after the last entry
};

// Renders `entries`, the first at `text_offset` (characters of the choice's text before it).
LogprobsText render_logprobs(std::span<const TokenLogprob> entries, int64_t text_offset);

// One choice. Its logprobs, when `has_logprobs`, are `shared` (rendered once, e.g.
// the echoed prompt's, may be null) followed by its own `entries`, which continue
// the text offsets where `shared` ended.
struct CompletionChoiceText {
  int32_t index = 0;
  std::string_view echo{};  // text before `text` (echo: the prompt)
  std::string_view text{};
  bool has_logprobs = false;
  const LogprobsText* shared = nullptr;
  std::span<const TokenLogprob> entries{};
  int64_t text_offset = 0;  // streaming: characters of this choice sent before (used when shared is null)
  std::optional<std::string_view> finish_reason{};
};

// The whole body: what dump_json(completion_object(...)) gives.
std::string completion_body(const ResponseHeader& header, std::span<const CompletionChoiceText> choices,
                            const Usage& usage);
// One streamed chunk's JSON: what dump_json(completion_chunk(...)) gives, with
// `usage` written verbatim ("null", an object) when given.
std::string completion_chunk_text(const ResponseHeader& header, const CompletionChoiceText& choice,
                                  std::optional<std::string_view> usage);

}  // namespace sluice::proto
