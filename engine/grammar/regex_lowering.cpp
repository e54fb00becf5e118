// RegexNode -> grammar rules; see regex_lowering.h.
#include "engine/grammar/regex_lowering.h"

#include <cctype>

#include "engine/grammar/utf8_text.h"

namespace sluice::grammar {
namespace {

// The code points JSON requires escaped inside a string.
const CodepointSet kJsonEscaped = {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}};

char hex_digit(uint32_t v) { return static_cast<char>(v < 10 ? '0' + v : 'a' + v - 10); }

}  // namespace

RegexLowering::RegexLowering(GrammarBuilder& builder, RegexTarget target, std::string name,
                             const GrammarLimits& limits)
    : builder_(builder),
      target_(target),
      name_(std::move(name)),
      limits_(limits),
      budget_(builder, limits.max_elements) {}

Alternative RegexLowering::lower(const RegexNode& node) {
  switch (node.kind) {
    case RegexNode::Kind::set: return lower_set(node.set, node.offset);
    case RegexNode::Kind::sequence: {
      Alternative out;
      for (const RegexNode& child : node.children) {
        Alternative part = lower(child);
        out.insert(out.end(), part.begin(), part.end());
      }
      return out;
    }
    case RegexNode::Kind::alternation: {
      std::vector<Alternative> alternatives;
      for (const RegexNode& child : node.children) alternatives.push_back(lower(child));
      const uint32_t group = builder_.add_rule(name_ + "_group");
      builder_.set_alternatives(group, std::move(alternatives));
      check_budget(node.offset);
      return {GrammarBuilder::ref(group)};
    }
    case RegexNode::Kind::repeat: {
      const Element body = as_element(lower(node.children.front()));
      if (!budget_.can_add(ElementBudget::repeat_cost(node.min, node.max)))
        throw GrammarError("the pattern is over the limit of " + std::to_string(limits_.max_elements) + " elements",
                           regex_offset(node.offset));
      const uint32_t rule =
          repetitions_.repeat(builder_, body, node.min, node.max, name_ + "_rep", node.offset);
      check_budget(node.offset);
      return {GrammarBuilder::ref(rule)};
    }
  }
  return {};
}

Element RegexLowering::any_string() {
  if (!any_string_) {
    const Element one = as_element(lower_set({{0, 0x10FFFF}}, 0));
    any_string_ = GrammarBuilder::ref(repetitions_.repeat(builder_, one, 0, -1, name_ + "_any", 0));
    check_budget(0);
  }
  return *any_string_;
}

void RegexLowering::finish() {
  repetitions_.finish(builder_, budget_, regex_offset);
  check_budget(0);
}

Alternative RegexLowering::lower_set(const CodepointSet& set, size_t offset) {
  const bool single = set.size() == 1 && set.front().first == set.front().second;
  if (target_ == RegexTarget::text) {
    if (single) return builder_.literal(utf8::encode(set.front().first));
    return {sets_.element(builder_, set, name_ + "_class")};
  }
  if (single) {
    const uint32_t cp = set.front().first;
    return set_contains(kJsonEscaped, cp) ? json_escape(cp) : builder_.literal(utf8::encode(cp));
  }
  if (auto it = json_sets_.find(set); it != json_sets_.end()) return {it->second};
  std::vector<Alternative> alternatives;
  const CodepointSet plain = subtract_sets(set, kJsonEscaped);
  if (has_scalar(plain)) alternatives.push_back({sets_.element(builder_, plain, name_ + "_class")});
  for (auto [first, last] : set)
    for (uint32_t cp = first; cp <= last && cp < 0x80; ++cp)
      if (set_contains(kJsonEscaped, cp)) alternatives.push_back(json_escape(cp));
  Element element;
  if (alternatives.size() == 1 && alternatives.front().size() == 1) {
    element = alternatives.front().front();
  } else {
    const uint32_t rule = builder_.add_rule(name_ + "_char");
    builder_.set_alternatives(rule, std::move(alternatives));
    element = GrammarBuilder::ref(rule);
  }
  json_sets_.emplace(set, element);
  check_budget(offset);
  return {element};
}

// How JSON writes `cp` escaped: the two-character forms where JSON has one, else
// \u00XX with either case of hex letter.
Alternative RegexLowering::json_escape(uint32_t cp) {
  switch (cp) {
    case '"': return builder_.literal("\\\"");
    case '\\': return builder_.literal("\\\\");
    case '\b': return builder_.literal("\\b");
    case '\f': return builder_.literal("\\f");
    case '\n': return builder_.literal("\\n");
    case '\r': return builder_.literal("\\r");
    case '\t': return builder_.literal("\\t");
    default: break;
  }
  Alternative out = builder_.literal(std::string("\\u00") + hex_digit(cp >> 4));
  ByteSet low;
  low.set(static_cast<uint8_t>(hex_digit(cp & 0xF)));
  low.set(static_cast<uint8_t>(std::toupper(hex_digit(cp & 0xF))));
  out.push_back(builder_.bytes(low));
  return out;
}

Element RegexLowering::as_element(Alternative alternative) {
  if (alternative.size() == 1) return alternative.front();
  return GrammarBuilder::ref(builder_.sequence(std::move(alternative), name_ + "_seq"));
}

void RegexLowering::check_budget(size_t offset) {
  budget_.sync(builder_);
  if (budget_.is_over())
    throw GrammarError("the pattern is over the limit of " + std::to_string(limits_.max_elements) + " elements",
                       regex_offset(offset));
}

}  // namespace sluice::grammar
