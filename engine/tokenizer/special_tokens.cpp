#include "engine/tokenizer/special_tokens.h"

#include <algorithm>

namespace sluice::tokenizer {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) : vocab_(&vocab), nodes_(1) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const TokenType type = vocab.types[static_cast<size_t>(id)];
    if (type != TokenType::Control && type != TokenType::UserDefined) continue;
    const std::string& text = vocab.tokens[static_cast<size_t>(id)];
    if (text.empty()) continue;
    int32_t node = 0;
    for (char c : text) {
      const auto byte = static_cast<uint8_t>(c);
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        auto& children = nodes_[static_cast<size_t>(node)].children;
        children.insert(std::lower_bound(children.begin(), children.end(),
                                         std::pair<uint8_t, int32_t>{byte, -1}),
                        {byte, next});
        nodes_.emplace_back();
      }
      node = next;
    }
    // Duplicate texts: the first id wins, like the token index.
    if (nodes_[static_cast<size_t>(node)].token < 0) nodes_[static_cast<size_t>(node)].token = id;
  }
}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t byte) const {
  const auto& children = nodes_[static_cast<size_t>(node)].children;
  const auto it = std::lower_bound(children.begin(), children.end(),
                                   std::pair<uint8_t, int32_t>{byte, -1});
  return it != children.end() && it->first == byte ? it->second : -1;
}

std::pair<int32_t, size_t> SpecialTokenMatcher::longest_at(std::string_view text, size_t pos,
                                                           bool parse_control) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    node = child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    const int32_t token = nodes_[static_cast<size_t>(node)].token;
    if (token >= 0 &&
        (parse_control || vocab_->types[static_cast<size_t>(token)] != TokenType::Control)) {
      best = {token, i + 1 - pos};
    }
  }
  return best;
}

void SpecialTokenMatcher::split(std::string_view text, bool parse_control,
                                std::vector<Fragment>& out) const {
  size_t start = 0;
  for (size_t pos = 0; pos < text.size();) {
    if (nodes_.front().children.empty()) break;
    const auto [token, len] = longest_at(text, pos, parse_control);
    if (token < 0) {
      ++pos;
      continue;
    }
    if (pos > start) out.push_back({text.substr(start, pos - start), -1});
    out.push_back({{}, token});
    pos += len;
    start = pos;
  }
  if (start < text.size()) out.push_back({text.substr(start), -1});
}

}  // namespace sluice::tokenizer
