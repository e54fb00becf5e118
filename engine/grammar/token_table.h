#pragma once
// The vocabulary as the matcher sees it: each token's byte string, built once per
// model. Control tokens (BOS, <|im_end|>, ...) have no bytes to match: they are never
// allowed by a grammar, except the end-of-generation ids, allowed exactly when the
// grammar is complete.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::grammar {

class TokenTable {
 public:
  // token_bytes[id]: the bytes the token decodes to (a SentencePiece byte-fallback
  // token is its one raw byte; a byte-level BPE token its raw bytes, which may be a
  // partial UTF-8 character). special[id]: a control token. eos_ids: the tokens that
  // end generation.
  TokenTable(std::vector<std::string> token_bytes, std::vector<bool> special, std::vector<int32_t> eos_ids);
  ~TokenTable();
  TokenTable(const TokenTable&) = delete;
  TokenTable& operator=(const TokenTable&) = delete;

  int32_t vocab_size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  bool is_special(int32_t id) const { return special_[static_cast<size_t>(id)]; }
  bool is_eos(int32_t id) const;
  const std::vector<int32_t>& eos_ids() const { return eos_ids_; }

  // The trie of every non-special, non-empty token's bytes (matcher.cpp walks it).
  struct Trie;
  const Trie& trie() const { return *trie_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<bool> special_;
  std::vector<int32_t> eos_ids_;
  std::unique_ptr<Trie> trie_;
};

}  // namespace sluice::grammar
