#include "engine/tokenizer/vocab.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>

#include "engine/loader/load_error.h"

namespace sluice::tokenizer {

namespace {

// Token texts that end a turn in the chat formats we serve; llama.cpp treats the same
// names as end-of-generation even when the file does not flag them.
constexpr std::array<std::string_view, 15> kEndOfGenerationNames = {
    "<|eot_id|>",     "<|im_end|>",   "<|end|>",       "<end_of_turn>",   "<|endoftext|>",
    "<|eom_id|>",     "<EOT>",        "_<EOT>",        "<|end_of_text|>", "<end_of_utterance>",
    "<|return|>",     "<|call|>",     "<|flush|>",     "<|calls|>",       "<｜end▁of▁sentence｜>",
};

void add_unique(std::vector<int32_t>& ids, int32_t id) {
  if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
}

}  // namespace

void Vocab::finish() {
  if (tokens.empty()) throw loader::LoadError(source, "the vocabulary has no tokens");
  if (types.empty()) types.assign(tokens.size(), TokenType::Normal);
  if (types.size() != tokens.size()) {
    throw loader::LoadError(source, "token types: " + std::to_string(types.size()) +
                                        " entries for " + std::to_string(tokens.size()) + " tokens");
  }
  if (!scores.empty() && scores.size() != tokens.size()) {
    throw loader::LoadError(source, "token scores: " + std::to_string(scores.size()) +
                                        " entries for " + std::to_string(tokens.size()) + " tokens");
  }
  token_to_id.clear();
  token_to_id.reserve(tokens.size());
  for (int32_t id = 0; id < size(); ++id) {
    // On duplicates the first id wins, as in llama.cpp and HF.
    token_to_id.emplace(tokens[static_cast<size_t>(id)], id);
  }
  auto check_id = [&](int32_t& id, std::string_view what) {
    if (id >= size()) {
      throw loader::LoadError(source, std::string(what) + " " + std::to_string(id) +
                                          " is outside the vocabulary of " +
                                          std::to_string(size()) + " tokens");
    }
  };
  check_id(bos_id, "bos token id");
  check_id(eos_id, "eos token id");
  check_id(eot_id, "eot token id");
  check_id(unk_id, "unknown token id");
  check_id(pad_id, "padding token id");

  byte_tokens.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_tokens[static_cast<size_t>(b)] = find(name);
  }

  add_unique(eog_ids, eos_id);
  add_unique(eog_ids, eot_id);
  for (std::string_view name : kEndOfGenerationNames) {
    const int32_t id = find(name);
    if (id >= 0 && (types[static_cast<size_t>(id)] == TokenType::Control ||
                    types[static_cast<size_t>(id)] == TokenType::UserDefined)) {
      add_unique(eog_ids, id);
    }
  }
}

}  // namespace sluice::tokenizer
