#pragma once
// A lower bound on how many tokens a text needs, computed from its bytes alone. It
// lets a server refuse a prompt that cannot fit the context before spending the time
// to tokenize it (a long text costs seconds of CPU).
//
// Two bounds, the larger wins:
// - no token stands for more bytes than the longest piece of the vocabulary;
// - a run of one repeated byte (spaces, newlines, "=====") is covered by tokens made
//   of that byte alone, apart from the at most two tokens that cross its ends, and
//   those tokens are much shorter than the longest piece: SmolLM2's longest token is
//   81 bytes, its longest run of spaces 64, so 530 KB of spaces needs over 8192.
// Sound for this project's tokenizers: they split the text into tokens without
// dropping or merging bytes (SentencePiece's space prefix only adds tokens).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice::tokenizer {

class Tokenizer;

class TokenCountBound {
 public:
  explicit TokenCountBound(const Tokenizer& tokenizer);

  // At most the number of tokens encode(text, ...) returns, whatever the flags.
  int64_t min_tokens(std::string_view text) const;
  // The same from a byte count alone (for texts that a template transforms).
  int64_t min_tokens_of_bytes(size_t num_bytes) const;

  size_t max_piece_bytes() const { return max_piece_bytes_; }
  // The longest token made of `byte` alone (at least 1).
  size_t max_run_piece_bytes(unsigned char byte) const { return max_run_piece_bytes_[byte]; }

 private:
  size_t max_piece_bytes_ = 1;  // the longest text any token stands for
  std::array<size_t, 256> max_run_piece_bytes_{};
};

}  // namespace sluice::tokenizer
