#pragma once
// Builds a Grammar: rules by name, byte classes deduplicated, and the lowerings every
// front end needs (literals, code point classes as UTF-8, bounded and unbounded
// repetition).
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/grammar/grammar.h"

namespace sluice::grammar {

// A code point range [first, last], both inclusive, first <= last <= 0x10FFFF.
using CodepointRange = std::pair<uint32_t, uint32_t>;

class GrammarBuilder {
 public:
  // A new rule with no alternatives yet, named `name` (made unique with a suffix
  // when taken). Returns its index.
  uint32_t add_rule(std::string_view name);
  // Reserves a rule index under `name` when it does not exist yet (for forward
  // references: GBNF, $ref); returns the existing one otherwise.
  uint32_t rule_named(std::string_view name);
  bool has_rule(std::string_view name) const { return by_name_.contains(std::string(name)); }
  void add_alternative(uint32_t rule, Alternative alternative);
  // Replaces a rule's alternatives.
  void set_alternatives(uint32_t rule, std::vector<Alternative> alternatives);
  const Rule& rule(uint32_t index) const { return grammar_.rules[index]; }
  const std::vector<Rule>& rules() const { return grammar_.rules; }
  size_t num_rules() const { return grammar_.rules.size(); }

  Element bytes(const ByteSet& set);  // one byte in `set`
  Element byte(uint8_t value);
  static Element ref(uint32_t rule) { return {Element::Kind::rule, rule}; }

  // The bytes of `text`, one element each.
  Alternative literal(std::string_view text);
  // A rule matching exactly one code point in the union of `ranges` (or, negated, one
  // code point outside it, surrogates excluded), as its UTF-8 encoding.
  uint32_t codepoints(std::vector<CodepointRange> ranges, bool negated, std::string_view name);
  // A rule matching `element` repeated between min and max times (max < 0: unbounded).
  uint32_t repeat(Element element, int min, int max, std::string_view name);
  // A rule with one alternative per element (a choice).
  uint32_t any_of(const std::vector<Element>& elements, std::string_view name);
  // A rule with the one sequence `alternative` (to use a sequence as an element).
  uint32_t sequence(Alternative alternative, std::string_view name);

  // Finishes: sets the root, validates (see Grammar::validate) and returns the grammar.
  Grammar build(uint32_t root, size_t max_elements = 1u << 20) &&;

  // Elements so far, for callers that bound the size while building.
  size_t num_elements() const { return grammar_.num_elements(); }

 private:
  Grammar grammar_;
  std::unordered_map<std::string, uint32_t> by_name_;
  // Per base name, the last suffix given: without it, the n-th rule made under one
  // name would try n - 1 taken names first (quadratic in rules per name).
  std::unordered_map<std::string, int> next_suffix_;
  std::unordered_map<std::string, uint32_t> set_index_;  // ByteSet bits -> index
};

// The UTF-8 byte-range sequences that encode exactly the code points of
// [first, last] (surrogates D800-DFFF excluded): each inner vector is one sequence
// of byte ranges, one range per byte.
std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_sequences(uint32_t first, uint32_t last);

}  // namespace sluice::grammar
