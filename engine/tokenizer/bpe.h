#pragma once
// BPE merging of one pre-token, for both vocabulary styles.
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace sluice::tokenizer {

// Merges the characters of one word into tokens. Two priorities, one algorithm:
//  - by rank: the pair with the earliest merge rule goes first (GPT-2 byte-level BPE,
//    and every HF tokenizer.json BPE);
//  - by score: the adjacent pair whose concatenation is the token with the highest
//    score goes first (SentencePiece vocabularies from GGUF, which carry scores but no
//    merges; llama.cpp's llm_tokenizer_spm does the same).
// Ties go to the leftmost pair. Symbols live in a linked list and candidate pairs in a
// heap, so a word of n characters costs O(n log n). Characters that never become a
// token fall back to <0xAB> byte tokens, or to the unknown token.
// Holds a pointer to the Vocab, which must outlive it. Immutable; any thread may call.
class BpeModel {
 public:
  explicit BpeModel(const Vocab& vocab);

  // `word` is in the vocabulary's alphabet (byte-level characters, or text with
  // spaces already turned into ▁). Appends its tokens to `out`.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  void emit_unknown(std::string_view text, std::vector<int32_t>& out) const;

  const Vocab* vocab_;
  bool by_rank_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> rule
};

}  // namespace sluice::tokenizer
