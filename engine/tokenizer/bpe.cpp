#include "engine/tokenizer/bpe.h"

#include <queue>

#include "engine/tokenizer/utf8.h"

namespace sluice::tokenizer {

namespace {

struct Symbol {
  uint32_t start;  // byte offset in the word
  uint32_t len;    // 0 once merged into its left neighbour
  int32_t id;      // token of word[start, start + len), or -1 when it is not one
  int32_t prev;
  int32_t next;
};

// A candidate merge of symbols[left] and its right neighbour. `len` is the merged
// length at the time it was queued: if either side changed since, the entry is stale.
struct Candidate {
  double priority;  // lower goes first: the rank, or minus the score
  int32_t left;
  int32_t right;
  uint32_t len;
  int32_t result;
};

struct Later {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.priority > b.priority || (a.priority == b.priority && a.left > b.left);
  }
};

}  // namespace

BpeModel::BpeModel(const Vocab& vocab) : vocab_(&vocab), by_rank_(!vocab.merges.empty()) {
  merges_.reserve(vocab.merges.size());
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const auto [left, right] = vocab.merges[rank];
    const std::string merged = vocab.tokens[static_cast<size_t>(left)] +
                               vocab.tokens[static_cast<size_t>(right)];
    const int32_t result = vocab.find(merged);
    if (result < 0) continue;  // the loaders reject these; be safe anyway
    // A repeated rule keeps its first (best) rank.
    merges_.emplace(pair_key(left, right), Merge{static_cast<int32_t>(rank), result});
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (vocab_->ignore_merges) {
    const int32_t whole = vocab_->find(word);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    size_t len = utf8::valid_sequence_at(word, pos);
    if (len == 0) len = 1;
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{static_cast<uint32_t>(pos), static_cast<uint32_t>(len),
                             vocab_->find(word.substr(pos, len)), index - 1, index + 1});
    pos += len;
  }
  symbols.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, Later> queue;
  auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[static_cast<size_t>(left)];
    const Symbol& r = symbols[static_cast<size_t>(right)];
    if (by_rank_) {
      if (l.id < 0 || r.id < 0) return;
      const auto it = merges_.find(pair_key(l.id, r.id));
      if (it == merges_.end()) return;
      queue.push({static_cast<double>(it->second.rank), left, right, l.len + r.len,
                  it->second.result});
    } else {
      const int32_t id = vocab_->find(word.substr(l.start, l.len + r.len));
      if (id < 0) return;
      const double score = vocab_->scores.empty() ? 0.0 : vocab_->scores[static_cast<size_t>(id)];
      queue.push({-score, left, right, l.len + r.len, id});
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) try_add(i, i + 1);

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<size_t>(top.left)];
    Symbol& r = symbols[static_cast<size_t>(top.right)];
    if (l.len == 0 || r.len == 0 || l.next != top.right || l.len + r.len != top.len) continue;
    l.len += r.len;
    l.id = top.result;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = top.left;
    try_add(l.prev, top.left);
    try_add(top.left, l.next);
  }

  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const Symbol& s = symbols[static_cast<size_t>(i)];
    if (s.id >= 0) {
      out.push_back(s.id);
    } else {
      emit_unknown(word.substr(s.start, s.len), out);
    }
  }
}

void BpeModel::emit_unknown(std::string_view text, std::vector<int32_t>& out) const {
  if (vocab_->byte_fallback) {
    bool all_bytes = true;
    for (char c : text) all_bytes = all_bytes && vocab_->byte_tokens[static_cast<uint8_t>(c)] >= 0;
    if (all_bytes) {
      for (char c : text) out.push_back(vocab_->byte_tokens[static_cast<uint8_t>(c)]);
      return;
    }
  }
  if (vocab_->unk_id >= 0) out.push_back(vocab_->unk_id);
}

}  // namespace sluice::tokenizer
