#include "engine/tokenizer/token_count_bound.h"

#include <algorithm>
#include <string>

#include "engine/tokenizer/tokenizer.h"

namespace sluice::tokenizer {
namespace {

// Control and user-defined tokens are found in the text by their spelling
// (special_tokens.h); the rest by the bytes they stand for.
bool matched_by_spelling(const Tokenizer& tokenizer, int32_t id) {
  const TokenType type = tokenizer.vocab().types[static_cast<size_t>(id)];
  return type == TokenType::Control || type == TokenType::UserDefined;
}

// Records `text` in `longest` when it is one byte repeated.
void note_run(const std::string& text, std::array<size_t, 256>& longest) {
  if (text.empty()) return;
  if (!std::all_of(text.begin(), text.end(), [&](char c) { return c == text.front(); })) return;
  size_t& slot = longest[static_cast<unsigned char>(text.front())];
  slot = std::max(slot, text.size());
}

}  // namespace

TokenCountBound::TokenCountBound(const Tokenizer& tokenizer) {
  max_run_piece_bytes_.fill(1);  // byte fallback: a single byte is always a token
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    // A token covers the bytes of its piece ("ĠĠ" stands for two spaces); a special
    // token such as <|im_end|> covers its spelling.
    const std::string& piece = tokenizer.token_to_piece(id);
    max_piece_bytes_ = std::max(max_piece_bytes_, piece.size());
    note_run(piece, max_run_piece_bytes_);
    if (matched_by_spelling(tokenizer, id)) {
      const std::string& spelling = tokenizer.token_text(id);
      max_piece_bytes_ = std::max(max_piece_bytes_, spelling.size());
      note_run(spelling, max_run_piece_bytes_);
    }
  }
}

int64_t TokenCountBound::min_tokens_of_bytes(size_t num_bytes) const {
  return static_cast<int64_t>(num_bytes / (max_piece_bytes_ + 1));
}

int64_t TokenCountBound::min_tokens(std::string_view text) const {
  // Tokens wholly inside a run are made of its byte alone, and no token is inside two
  // runs; the two tokens crossing a run's ends cover at most 2 * max_piece_bytes_ of it.
  int64_t inside_runs = 0;
  const size_t edges = 2 * max_piece_bytes_;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = pos + 1;
    while (end < text.size() && text[end] == text[pos]) ++end;
    const size_t run = end - pos;
    if (run > edges) {
      const size_t longest = max_run_piece_bytes_[static_cast<unsigned char>(text[pos])];
      inside_runs += static_cast<int64_t>((run - edges + longest - 1) / longest);
    }
    pos = end;
  }
  return std::max(min_tokens_of_bytes(text.size()), inside_runs);
}

}  // namespace sluice::tokenizer
