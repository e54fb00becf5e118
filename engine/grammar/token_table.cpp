// TokenTable and the breadth-first build of its trie.
#include "engine/grammar/token_table.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "engine/grammar/token_trie.h"

namespace sluice::grammar {
namespace {

// Builds the trie from the ids of the tokens it holds, sorted by their bytes. A node
// stands for a range of that sorted list sharing a prefix of `depth` bytes: the tokens
// exactly `depth` bytes long come first (a prefix sorts before its extensions) and end
// at the node; the rest split into one child per next byte. The queue is processed in
// node order, which numbers the nodes breadth-first.
void build_trie(const std::vector<std::string>& bytes, const std::vector<int32_t>& sorted, TokenTable::Trie& trie) {
  struct Pending {
    size_t first, last;  // [first, last) of `sorted`
    size_t depth;
  };
  std::vector<Pending> queue{{0, sorted.size(), 0}};
  trie.byte.push_back(0);
  for (size_t n = 0; n < queue.size(); ++n) {
    auto [first, last, depth] = queue[n];
    trie.token_begin.push_back(static_cast<uint32_t>(trie.token_ids.size()));
    while (first < last && bytes[static_cast<size_t>(sorted[first])].size() == depth)
      trie.token_ids.push_back(sorted[first++]);
    trie.child_begin.push_back(static_cast<uint32_t>(queue.size()));
    while (first < last) {
      const char b = bytes[static_cast<size_t>(sorted[first])][depth];
      size_t end = first + 1;
      while (end < last && bytes[static_cast<size_t>(sorted[end])][depth] == b) ++end;
      queue.push_back({first, end, depth + 1});
      trie.byte.push_back(static_cast<uint8_t>(b));
      first = end;
    }
  }
  trie.token_begin.push_back(static_cast<uint32_t>(trie.token_ids.size()));
  trie.child_begin.push_back(static_cast<uint32_t>(queue.size()));
}

}  // namespace

TokenTable::TokenTable(std::vector<std::string> token_bytes, std::vector<bool> special, std::vector<int32_t> eos_ids)
    : bytes_(std::move(token_bytes)), special_(std::move(special)), eos_ids_(std::move(eos_ids)) {
  if (special_.size() != bytes_.size()) throw std::invalid_argument("TokenTable: one special flag per token");
  for (int32_t id : eos_ids_)
    if (id < 0 || static_cast<size_t>(id) >= bytes_.size()) throw std::invalid_argument("TokenTable: EOS id out of range");
  std::sort(eos_ids_.begin(), eos_ids_.end());
  eos_ids_.erase(std::unique(eos_ids_.begin(), eos_ids_.end()), eos_ids_.end());

  std::vector<std::pair<std::string_view, int32_t>> by_bytes;
  by_bytes.reserve(bytes_.size());
  for (int32_t id = 0; id < vocab_size(); ++id) {
    const std::string& b = bytes_[static_cast<size_t>(id)];
    if (!special_[static_cast<size_t>(id)] && !is_eos(id) && !b.empty()) by_bytes.emplace_back(b, id);
  }
  // string_view orders bytes as unsigned chars, so children come out sorted by byte.
  std::sort(by_bytes.begin(), by_bytes.end());
  std::vector<int32_t> sorted;
  sorted.reserve(by_bytes.size());
  for (const auto& entry : by_bytes) sorted.push_back(entry.second);
  trie_ = std::make_unique<Trie>();
  build_trie(bytes_, sorted, *trie_);
}

TokenTable::~TokenTable() = default;

bool TokenTable::is_eos(int32_t id) const { return std::binary_search(eos_ids_.begin(), eos_ids_.end(), id); }

}  // namespace sluice::grammar
