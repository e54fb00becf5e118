#pragma once
// The named tokens of a Hugging Face tokenizer_config.json, shared by the two folder
// loaders (tokenizer.json, and vocab.json + merges.txt). Internal to engine/tokenizer.
#include <string>

#include <nlohmann/json.hpp>

#include "engine/tokenizer/vocab.h"

namespace sluice::tokenizer::detail {

// A token written as a string or as {"content": "..."}; "" for anything else.
std::string token_content(const nlohmann::json& value);

// Sets vocab's bos / eos / pad / unk ids from config's bos_token, eos_token,
// pad_token and unk_token (-1 where absent or not in the vocabulary), and returns
// the text -> id index it looked them up in (vocab.finish() builds the real one).
TokenIndex resolve_named_tokens(const nlohmann::json& config, Vocab& vocab);

}  // namespace sluice::tokenizer::detail
