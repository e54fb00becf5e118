// Code point set algebra and its lowering; see codepoint_set.h.
#include "engine/grammar/codepoint_set.h"

#include <algorithm>

namespace sluice::grammar {
namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

}  // namespace

CodepointSet normalize_set(CodepointSet ranges) {
  std::sort(ranges.begin(), ranges.end());
  CodepointSet merged;
  for (auto [first, last] : ranges) {
    if (first > last) throw GrammarError("code point range out of order");
    if (first > kMaxCodepoint) continue;
    last = std::min(last, kMaxCodepoint);
    if (!merged.empty() && first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, last);
    else
      merged.emplace_back(first, last);
  }
  return merged;
}

CodepointSet complement_set(const CodepointSet& set) {
  CodepointSet out;
  uint32_t next = 0;
  for (auto [first, last] : set) {
    if (first > next) out.emplace_back(next, first - 1);
    next = last + 1;
  }
  if (next <= kMaxCodepoint) out.emplace_back(next, kMaxCodepoint);
  return out;
}

CodepointSet union_sets(const CodepointSet& a, const CodepointSet& b) {
  CodepointSet all = a;
  all.insert(all.end(), b.begin(), b.end());
  return normalize_set(std::move(all));
}

CodepointSet subtract_sets(const CodepointSet& set, const CodepointSet& removed) {
  // set \ removed = complement(complement(set) | removed)
  return complement_set(union_sets(complement_set(set), removed));
}

bool set_contains(const CodepointSet& set, uint32_t cp) {
  return std::any_of(set.begin(), set.end(), [cp](const CodepointRange& r) { return r.first <= cp && cp <= r.second; });
}

bool has_scalar(const CodepointSet& set) {
  return !subtract_sets(set, {{0xD800, 0xDFFF}}).empty();
}

Element CodepointSetElements::element(GrammarBuilder& builder, const CodepointSet& set, std::string_view name) {
  if (auto it = cache_.find(set); it != cache_.end()) return it->second;
  Element element;
  if (!set.empty() && set.back().second < 0x80) {
    ByteSet bytes;
    for (auto [first, last] : set)
      for (uint32_t b = first; b <= last; ++b) bytes.set(b);
    element = builder.bytes(bytes);
  } else {
    element = GrammarBuilder::ref(builder.codepoints(set, false, name));
  }
  cache_.emplace(set, element);
  return element;
}

}  // namespace sluice::grammar
