#pragma once
// Reads a Hugging Face tokenizer.json (+ tokenizer_config.json, generation_config.json)
// into a Vocab, for models that come as safetensors.
#include <filesystem>

#include "engine/tokenizer/vocab.h"

namespace sluice::tokenizer {

// Supports the BPE model with a ByteLevel pre-tokenizer (optionally behind Split and
// Digits steps) and the SentencePiece-style BPE (Replace " " -> "▁" normalizer or
// Metaspace, byte_fallback). Throws loader::LoadError naming the file and the field.
Vocab vocab_from_hf_dir(const std::filesystem::path& dir);

}  // namespace sluice::tokenizer
