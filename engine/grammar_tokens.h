#pragma once
// A model's vocabulary as the grammar matcher sees it (grammar::TokenTable), built
// once per model from its tokenizer.
#include <cstdint>
#include <memory>

#include "engine/grammar/token_table.h"
#include "engine/tokenizer/tokenizer.h"

namespace sluice::engine {

// `logits_vocab`: the model's output rows, which may exceed the tokenizer's
// vocabulary (padding rows): those ids are control tokens, never allowed.
std::shared_ptr<const grammar::TokenTable> make_token_table(const tokenizer::Tokenizer& tokenizer,
                                                            int32_t logits_vocab);

}  // namespace sluice::engine
