#pragma once
// The trie of a TokenTable's matchable tokens, in flat arrays so that a mask walk
// reads memory in order instead of chasing pointers.
//
// Nodes are numbered breadth-first from the root (node 0), so the children of a node
// are consecutive nodes and the children of consecutive nodes are consecutive ranges:
// node n's children are [child_begin[n], child_begin[n + 1]), sorted by byte, and
// byte[c] is the byte on the edge into node c. The tokens whose bytes end at node n
// are token_ids[token_begin[n] .. token_begin[n + 1]). Special tokens, EOS ids and
// empty tokens are not in the trie.
#include <cstdint>
#include <vector>

#include "engine/grammar/token_table.h"

namespace sluice::grammar {

struct TokenTable::Trie {
  std::vector<uint32_t> child_begin;  // (num_nodes + 1)
  std::vector<uint8_t> byte;          // (num_nodes); byte[0] unused (the root)
  std::vector<uint32_t> token_begin;  // (num_nodes + 1)
  std::vector<int32_t> token_ids;     // (number of tokens in the trie)

  uint32_t num_nodes() const { return static_cast<uint32_t>(byte.size()); }
};

}  // namespace sluice::grammar
