#pragma once
// Streaming token ids -> text that never hands out half a UTF-8 character.
#include <cstdint>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace sluice::tokenizer {

// Turns one sequence's generated ids into text as they arrive. A byte-level piece or a
// <0xAB> byte-fallback token may carry only part of a character; those bytes wait
// until the character is complete. Bytes that can never become a valid character come
// out as U+FFFD, so everything returned is valid UTF-8. Owns the pending bytes of one
// sequence; used by the engine thread only. The Tokenizer must outlive it.
class IncrementalDetokenizer {
 public:
  // skip_special: control tokens (EOS, <|im_end|> ...) produce no text.
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = true);

  // The text that became complete with this token (often empty for partial bytes).
  std::string push(int32_t id);
  // The end of the sequence: whatever is pending, incomplete bytes as U+FFFD.
  std::string flush();
  // Bytes held back waiting for the rest of a character (0..3).
  size_t num_pending() const { return pending_.size(); }

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  bool seen_text_ = false;  // SentencePiece: the first text drops its prefixed space
  std::string pending_;
};

}  // namespace sluice::tokenizer
