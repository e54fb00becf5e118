#pragma once
// Reads the tokenizer.* metadata of a GGUF file into a Vocab.
#include <string>
#include <string_view>
#include <utility>

#include "engine/loader/gguf_file.h"
#include "engine/tokenizer/vocab.h"

namespace sluice::tokenizer {

// Throws loader::LoadError naming the file and the offending key: a missing or
// malformed tokens array, merges that name unknown tokens, ids out of range, an
// unsupported tokenizer.ggml.model or tokenizer.ggml.pre.
Vocab vocab_from_gguf(const loader::GgufFile& file);

// Parses the merge rules ("left right", split at the first space after the first
// character) into id pairs; `what` names the key or field for errors.
void parse_merges(Vocab& vocab, std::string_view what,
                  const std::vector<std::pair<std::string_view, std::string_view>>& rules);

}  // namespace sluice::tokenizer
