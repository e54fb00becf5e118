#pragma once
// Finds control and user-defined tokens inside text, before any splitting.
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace sluice::tokenizer {

// A run of text to tokenize, or one token found whole in the text.
struct Fragment {
  std::string_view text;  // empty when token >= 0
  int32_t token = -1;
};

// A byte trie over the texts of the control and user-defined tokens. split() scans the
// text left to right and at each position takes the longest token that starts there
// (leftmost-longest, as HF's added-token matcher does). User-defined tokens always
// match; control tokens only when the caller parses specials. Immutable after
// construction; any thread may call split().
class SpecialTokenMatcher {
 public:
  explicit SpecialTokenMatcher(const Vocab& vocab);

  void split(std::string_view text, bool parse_control, std::vector<Fragment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // (byte, node index), sorted
    int32_t token = -1;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  // The longest allowed token starting at text[pos]: (token, length) or (-1, 0).
  std::pair<int32_t, size_t> longest_at(std::string_view text, size_t pos, bool parse_control) const;

  const Vocab* vocab_;
  std::vector<Node> nodes_;  // nodes_[0] is the root
};

}  // namespace sluice::tokenizer
