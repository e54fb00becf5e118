#pragma once
// Sets of code points as sorted, disjoint, non-adjacent ranges, and their lowering to
// grammar elements: what GBNF classes, regex classes and escapes like \d share.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/grammar/grammar_builder.h"

namespace sluice::grammar {

using CodepointSet = std::vector<CodepointRange>;  // normalized: sorted, disjoint, merged

// Sorts and merges; ranges past U+10FFFF are clipped. Throws GrammarError on first > last.
CodepointSet normalize_set(CodepointSet ranges);
// Every code point in [0, U+10FFFF] that is not in `set` (surrogates included; they are
// dropped when the set is encoded as UTF-8).
CodepointSet complement_set(const CodepointSet& set);
CodepointSet union_sets(const CodepointSet& a, const CodepointSet& b);
// `set` without the code points in `removed`.
CodepointSet subtract_sets(const CodepointSet& set, const CodepointSet& removed);
bool set_contains(const CodepointSet& set, uint32_t cp);
// True when the set holds a code point UTF-8 can encode (one that is not a surrogate).
bool has_scalar(const CodepointSet& set);

// The element matching one code point of a set, as its UTF-8 bytes: a single byte
// class when every member is ASCII, else a reference to a GrammarBuilder::codepoints
// rule. Equal sets share one rule. One per grammar being built.
class CodepointSetElements {
 public:
  // `set` must be normalized and hold a scalar (has_scalar).
  Element element(GrammarBuilder& builder, const CodepointSet& set, std::string_view name);

 private:
  std::map<CodepointSet, Element> cache_;
};

}  // namespace sluice::grammar
