#include "engine/tokenizer/detokenizer.h"

#include <string_view>

#include "engine/tokenizer/utf8.h"

namespace sluice::tokenizer {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special)
    : tokenizer_(&tokenizer), skip_special_(skip_special) {}

std::string IncrementalDetokenizer::push(int32_t id) {
  const bool special = tokenizer_->is_special(id);
  if (skip_special_ && special) return {};
  std::string_view piece = tokenizer_->token_to_piece(id);
  if (!special && !seen_text_) {
    if (tokenizer_->add_space_prefix() && piece.starts_with(' ')) piece.remove_prefix(1);
    seen_text_ = true;
  }
  pending_ += piece;
  const size_t tail = utf8::incomplete_tail(pending_);
  std::string ready = utf8::sanitize(std::string_view(pending_).substr(0, pending_.size() - tail));
  pending_.erase(0, pending_.size() - tail);
  return ready;
}

std::string IncrementalDetokenizer::flush() {
  std::string rest = utf8::sanitize(pending_);
  pending_.clear();
  return rest;
}

}  // namespace sluice::tokenizer
