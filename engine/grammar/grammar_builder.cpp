// GrammarBuilder, utf8_sequences and Grammar::validate.
#include "engine/grammar/grammar_builder.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <optional>

namespace sluice::grammar {
namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;
constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;

void encode(uint32_t cp, int n, uint8_t* out) {
  if (n == 1) {
    out[0] = static_cast<uint8_t>(cp);
    return;
  }
  for (int i = n - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  out[0] = static_cast<uint8_t>((n == 2 ? 0xC0 : n == 3 ? 0xE0 : 0xF0) | cp);
}

using ByteRanges = std::vector<std::pair<uint8_t, uint8_t>>;

// [lo, hi] of one encoded length: split until every byte position is a plain range
// (the trailing positions of lo all 0x80 and of hi all 0xBF wherever a leading byte differs).
void split_same_length(uint32_t lo, uint32_t hi, int n, std::vector<ByteRanges>& out) {
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, n, out);
        split_same_length((lo | m) + 1, hi, n, out);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, n, out);
        split_same_length(hi & ~m, hi, n, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode(lo, n, a);
  encode(hi, n, b);
  ByteRanges ranges;
  for (int i = 0; i < n; ++i) ranges.emplace_back(a[i], b[i]);
  out.push_back(std::move(ranges));
}

void split_lengths(uint32_t lo, uint32_t hi, std::vector<ByteRanges>& out) {
  static constexpr uint32_t kLast[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodepoint};
  for (int n = 1; n <= 4 && lo <= hi; ++n) {
    const uint32_t end = std::min(hi, kLast[n - 1]);
    if (lo <= end) {
      split_same_length(lo, end, n, out);
      lo = end + 1;
    }
  }
}

std::vector<CodepointRange> normalized(std::vector<CodepointRange> ranges, bool negated) {
  std::sort(ranges.begin(), ranges.end());
  std::vector<CodepointRange> merged;
  for (auto [first, last] : ranges) {
    if (first > last) throw GrammarError("code point range out of order");
    last = std::min(last, kMaxCodepoint);
    if (first > kMaxCodepoint) continue;
    if (!merged.empty() && first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, last);
    else
      merged.emplace_back(first, last);
  }
  if (!negated) return merged;
  std::vector<CodepointRange> complement;
  uint32_t next = 0;
  for (auto [first, last] : merged) {
    if (first > next) complement.emplace_back(next, first - 1);
    next = last + 1;
  }
  if (next <= kMaxCodepoint) complement.emplace_back(next, kMaxCodepoint);
  return complement;
}

}  // namespace

std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_sequences(uint32_t first, uint32_t last) {
  std::vector<ByteRanges> out;
  if (first > last || first > kMaxCodepoint) return out;
  last = std::min(last, kMaxCodepoint);
  if (first < kSurrogateFirst) split_lengths(first, std::min(last, kSurrogateFirst - 1), out);
  if (last > kSurrogateLast) split_lengths(std::max(first, kSurrogateLast + 1), last, out);
  return out;
}

uint32_t GrammarBuilder::add_rule(std::string_view name) {
  std::string unique(name.empty() ? "rule" : name);
  if (by_name_.contains(unique)) {
    int& suffix = next_suffix_[unique];  // the last suffix given under this name
    std::string candidate;
    do {
      candidate = unique + "-" + std::to_string(++suffix);
    } while (by_name_.contains(candidate));
    unique = std::move(candidate);
  }
  const auto index = static_cast<uint32_t>(grammar_.rules.size());
  grammar_.rules.push_back(Rule{unique, {}});
  by_name_.emplace(std::move(unique), index);
  return index;
}

uint32_t GrammarBuilder::rule_named(std::string_view name) {
  if (auto it = by_name_.find(std::string(name)); it != by_name_.end()) return it->second;
  return add_rule(name);
}

void GrammarBuilder::add_alternative(uint32_t rule, Alternative alternative) {
  grammar_.rules.at(rule).alternatives.push_back(std::move(alternative));
}

void GrammarBuilder::set_alternatives(uint32_t rule, std::vector<Alternative> alternatives) {
  grammar_.rules.at(rule).alternatives = std::move(alternatives);
}

Element GrammarBuilder::bytes(const ByteSet& set) {
  const std::string key = set.to_string();
  auto [it, inserted] = set_index_.emplace(key, static_cast<uint32_t>(grammar_.byte_sets.size()));
  if (inserted) grammar_.byte_sets.push_back(set);
  return {Element::Kind::bytes, it->second};
}

Element GrammarBuilder::byte(uint8_t value) {
  ByteSet set;
  set.set(value);
  return bytes(set);
}

Alternative GrammarBuilder::literal(std::string_view text) {
  Alternative out;
  out.reserve(text.size());
  for (char c : text) out.push_back(byte(static_cast<uint8_t>(c)));
  return out;
}

uint32_t GrammarBuilder::codepoints(std::vector<CodepointRange> ranges, bool negated, std::string_view name) {
  const uint32_t rule = add_rule(name);
  ByteSet single;  // every one-byte sequence in one class
  std::vector<Alternative> alternatives;
  for (auto [first, last] : normalized(std::move(ranges), negated)) {
    for (const auto& sequence : utf8_sequences(first, last)) {
      if (sequence.size() == 1) {
        for (int b = sequence[0].first; b <= sequence[0].second; ++b) single.set(static_cast<size_t>(b));
        continue;
      }
      Alternative alternative;
      for (auto [lo, hi] : sequence) {
        ByteSet set;
        for (int b = lo; b <= hi; ++b) set.set(static_cast<size_t>(b));
        alternative.push_back(bytes(set));
      }
      alternatives.push_back(std::move(alternative));
    }
  }
  if (single.any()) alternatives.insert(alternatives.begin(), Alternative{bytes(single)});
  if (alternatives.empty()) throw GrammarError("a character class that matches nothing");
  set_alternatives(rule, std::move(alternatives));
  return rule;
}

uint32_t GrammarBuilder::repeat(Element element, int min, int max, std::string_view name) {
  if (min < 0 || (max >= 0 && max < min)) throw GrammarError("repetition bounds out of order");
  const std::string base(name);
  // The optional tail: unbounded -> tail ::= element tail | ""; bounded by k ->
  // a chain opt_k ::= element opt_{k-1} | "", opt_0 absent.
  std::optional<uint32_t> tail;
  if (max < 0) {
    const uint32_t star = add_rule(base + "-star");
    set_alternatives(star, {{element, ref(star)}, {}});
    tail = star;
  } else {
    for (int k = 1; k <= max - min; ++k) {
      const uint32_t opt = add_rule(base + "-opt");
      Alternative first{element};
      if (tail) first.push_back(ref(*tail));
      set_alternatives(opt, {std::move(first), {}});
      tail = opt;
    }
  }
  const uint32_t rule = add_rule(base);
  Alternative body(static_cast<size_t>(min), element);
  if (tail) body.push_back(ref(*tail));
  set_alternatives(rule, {std::move(body)});
  return rule;
}

uint32_t GrammarBuilder::any_of(const std::vector<Element>& elements, std::string_view name) {
  const uint32_t rule = add_rule(name);
  std::vector<Alternative> alternatives;
  for (const Element& e : elements) alternatives.push_back({e});
  set_alternatives(rule, std::move(alternatives));
  return rule;
}

uint32_t GrammarBuilder::sequence(Alternative alternative, std::string_view name) {
  const uint32_t rule = add_rule(name);
  set_alternatives(rule, {std::move(alternative)});
  return rule;
}

Grammar GrammarBuilder::build(uint32_t root, size_t max_elements) && {
  grammar_.root = root;
  grammar_.validate(max_elements);
  return std::move(grammar_);
}

size_t Grammar::num_elements() const {
  size_t n = 0;
  for (const Rule& rule : rules)
    for (const Alternative& alternative : rule.alternatives) n += alternative.size() + 1;
  return n;
}

std::vector<char> nullable_rules(const std::vector<Rule>& rules) {
  const size_t n = rules.size();
  std::vector<char> nullable(n, 0);
  // Per alternative, how many of its elements are not yet known to match "".
  struct Pending {
    uint32_t rule;
    size_t remaining;
  };
  std::vector<Pending> pending;
  std::vector<std::vector<size_t>> uses(n);  // rule -> pending entries it occurs in (once per occurrence)
  std::deque<uint32_t> queue;
  auto mark = [&](uint32_t r) {
    if (!nullable[r]) {
      nullable[r] = 1;
      queue.push_back(r);
    }
  };
  for (uint32_t r = 0; r < n; ++r)
    for (const Alternative& alternative : rules[r].alternatives) {
      bool has_bytes = false;
      for (const Element& e : alternative) has_bytes |= e.kind == Element::Kind::bytes;
      if (has_bytes) continue;
      if (alternative.empty()) {
        mark(r);
        continue;
      }
      pending.push_back({r, alternative.size()});
      for (const Element& e : alternative) uses[e.index].push_back(pending.size() - 1);
    }
  while (!queue.empty()) {
    const uint32_t r = queue.front();
    queue.pop_front();
    for (size_t p : uses[r])
      if (--pending[p].remaining == 0) mark(pending[p].rule);
  }
  return nullable;
}

void Grammar::validate(size_t max_elements) const {
  if (root >= rules.size()) throw GrammarError("the root rule does not exist");
  if (num_elements() > max_elements)
    throw GrammarError("the grammar has " + std::to_string(num_elements()) + " elements, over the limit of " +
                       std::to_string(max_elements));
  for (const Rule& rule : rules) {
    if (rule.alternatives.empty()) throw GrammarError("rule '" + rule.name + "' is used but never defined");
    for (const Alternative& alternative : rule.alternatives)
      for (const Element& e : alternative) {
        const size_t limit = e.kind == Element::Kind::rule ? rules.size() : byte_sets.size();
        if (e.index >= limit) throw GrammarError("rule '" + rule.name + "' refers to a missing element");
      }
  }
  const std::vector<char> nullable = nullable_rules(rules);
  // Left recursion: a cycle through references reachable before any byte is consumed.
  std::vector<std::vector<uint32_t>> leading(rules.size());
  for (size_t r = 0; r < rules.size(); ++r)
    for (const Alternative& alternative : rules[r].alternatives)
      for (const Element& e : alternative) {
        if (e.kind == Element::Kind::bytes) break;
        leading[r].push_back(e.index);
        if (!nullable[e.index]) break;
      }
  std::vector<uint8_t> state(rules.size(), 0);  // 0 new, 1 on the path, 2 done
  std::function<void(uint32_t)> visit = [&](uint32_t r) {
    state[r] = 1;
    for (uint32_t next : leading[r]) {
      if (state[next] == 1) throw GrammarError("rule '" + rules[next].name + "' is left-recursive");
      if (state[next] == 0) visit(next);
    }
    state[r] = 2;
  };
  for (uint32_t r = 0; r < rules.size(); ++r)
    if (state[r] == 0) visit(r);
}

}  // namespace sluice::grammar
