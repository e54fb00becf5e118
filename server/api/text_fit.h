#pragma once
// The refusal of a text that cannot fit a model's context, decided from its bytes
// before any tokenizing (the bound is engine/tokenizer/token_count_bound.h).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "proto/errors.h"

namespace sluice::server {

// 400 context_length_exceeded naming `param` when `min_tokens` (a lower bound on the
// text's tokens) plus `reserve` (1: generation needs room for a token; /tokenize 0)
// exceeds `max_model_len`; nullopt when the text may fit.
std::optional<proto::ApiError> text_too_long(int64_t max_model_len, int64_t min_tokens, size_t num_bytes,
                                             const std::string& param, int64_t reserve = 1);

}  // namespace sluice::server
