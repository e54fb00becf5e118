#pragma once
// Reads the older Hugging Face byte-level BPE layout that Qwen3-TTS checkpoints
// publish instead of a tokenizer.json: vocab.json (token -> id), merges.txt (one
// "left right" rule per line, an optional "#version" header) and
// tokenizer_config.json (added_tokens_decoder for the special tokens, eos/pad
// names). The pre-tokenizer is Qwen2's split regex, as transformers' Qwen2Tokenizer
// applies it. Not applied: the NFC normalizer (text is taken as given) and the
// Mistral-regex substitution transformers 4.57 makes under fix_mistral_regex (which
// qwen-tts's Qwen3TTSModel.from_pretrained passes), which only changes rare inputs.
#include <filesystem>

#include "engine/tokenizer/vocab.h"

namespace sluice::tokenizer {

// Throws loader::LoadError naming the file and the field at fault.
Vocab vocab_from_vocab_merges(const std::filesystem::path& dir);

}  // namespace sluice::tokenizer
