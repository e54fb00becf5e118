#pragma once
// The draft model of speculative decoding (method draft_model): loaded on the
// target's backend, and refused at load unless its tokenizer is the target's, since
// the target verifies the draft's token ids as its own.
#include <memory>
#include <string>

#include "backends/backend.h"
#include "engine/models/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace sluice::server {

// Throws std::runtime_error naming both models when the vocabularies differ (a
// token's text, the sizes by more than padding, BOS or EOS), and loader::LoadError
// for a malformed file.
std::unique_ptr<engine::Model> load_draft_model(const std::string& path, backends::Backend& backend,
                                                const tokenizer::Tokenizer& target, const std::string& model_id);

// Empty when `draft` reads and writes the same token ids as `target`; else what differs.
std::string tokenizer_mismatch(const tokenizer::Tokenizer& target, const tokenizer::Tokenizer& draft);

}  // namespace sluice::server
