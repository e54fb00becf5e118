#pragma once
// Helpers of the matcher tests: a toy vocabulary, a hand-built JSON grammar, and masks
// computed by the matcher and by brute force (every token tried on a copy).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/matcher.h"
#include "engine/grammar/token_table.h"

namespace sluice::grammar::testing {

using Mask = std::vector<uint64_t>;

inline Mask mask_of(const Matcher& m) {
  Mask mask(Matcher::mask_words(m.grammar().tokens().vocab_size()), ~uint64_t{0});
  m.fill_mask(mask);
  return mask;
}

// The reference: a token is allowed when a copy of the matcher accepts it.
inline Mask brute_force_mask(const Matcher& m) {
  const int32_t n = m.grammar().tokens().vocab_size();
  Mask mask(Matcher::mask_words(n), 0);
  for (int32_t id = 0; id < n; ++id) {
    Matcher copy = m;
    if (copy.accept_token(id)) mask[static_cast<size_t>(id) / 64] |= uint64_t{1} << (id % 64);
  }
  return mask;
}

inline bool allows(const Mask& mask, int32_t id) { return (mask[static_cast<size_t>(id) / 64] >> (id % 64)) & 1; }

inline int count_allowed(const Mask& mask) {
  int n = 0;
  for (uint64_t w : mask) n += __builtin_popcountll(w);
  return n;
}

// JSON: objects, arrays, strings with escapes (any code point but '"', '\' and
// controls), numbers, true/false/null, whitespace [ \t\n]* between tokens.
inline Grammar json_grammar() {
  GrammarBuilder b;
  const auto set_of = [&](std::string_view chars) {
    ByteSet s;
    for (char c : chars) s.set(static_cast<uint8_t>(c));
    return b.bytes(s);
  };
  const auto range = [&](char lo, char hi) {
    ByteSet s;
    for (int c = lo; c <= hi; ++c) s.set(static_cast<size_t>(c));
    return b.bytes(s);
  };
  const auto opt = [&](Alternative alt, std::string_view name) {
    const uint32_t r = b.add_rule(name);
    b.set_alternatives(r, {std::move(alt), {}});
    return GrammarBuilder::ref(r);
  };
  const uint32_t value = b.add_rule("value");
  const Element ws = GrammarBuilder::ref(b.repeat(set_of(" \t\n"), 0, -1, "ws"));
  const Element digit = range('0', '9');
  const Element digits = GrammarBuilder::ref(b.repeat(digit, 1, -1, "digits"));

  ByteSet hex_set;
  for (char c : std::string("0123456789abcdefABCDEF")) hex_set.set(static_cast<uint8_t>(c));
  const Element hex = b.bytes(hex_set);
  const uint32_t escaped = b.add_rule("escaped");
  b.set_alternatives(escaped, {{set_of("\"\\/bfnrt")}, {b.byte('u'), hex, hex, hex, hex}});
  const uint32_t plain = b.codepoints({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, true, "plain");
  const uint32_t ch = b.add_rule("char");
  b.set_alternatives(ch, {{GrammarBuilder::ref(plain)}, {b.byte('\\'), GrammarBuilder::ref(escaped)}});
  const Element chars = GrammarBuilder::ref(b.repeat(GrammarBuilder::ref(ch), 0, -1, "chars"));
  const Element string = GrammarBuilder::ref(b.sequence({b.byte('"'), chars, b.byte('"')}, "string"));

  const uint32_t integer = b.add_rule("integer");
  b.set_alternatives(integer,
                     {{b.byte('0')}, {range('1', '9'), GrammarBuilder::ref(b.repeat(digit, 0, -1, "more-digits"))}});
  const Element number = GrammarBuilder::ref(b.sequence(
      {opt({b.byte('-')}, "minus"), GrammarBuilder::ref(integer), opt({b.byte('.'), digits}, "fraction"),
       opt({set_of("eE"), opt({set_of("+-")}, "sign"), digits}, "exponent")},
      "number"));

  const Element member = GrammarBuilder::ref(
      b.sequence({string, ws, b.byte(':'), ws, GrammarBuilder::ref(value)}, "member"));
  const Element more_members =
      GrammarBuilder::ref(b.repeat(GrammarBuilder::ref(b.sequence({ws, b.byte(','), ws, member}, "next-member")), 0,
                                   -1, "more-members"));
  const uint32_t object = b.add_rule("object");
  b.set_alternatives(object, {{b.byte('{'), ws, member, more_members, ws, b.byte('}')}, {b.byte('{'), ws, b.byte('}')}});
  const Element more_values = GrammarBuilder::ref(b.repeat(
      GrammarBuilder::ref(b.sequence({ws, b.byte(','), ws, GrammarBuilder::ref(value)}, "next-value")), 0, -1,
      "more-values"));
  const uint32_t array = b.add_rule("array");
  b.set_alternatives(array, {{b.byte('['), ws, GrammarBuilder::ref(value), more_values, ws, b.byte(']')},
                             {b.byte('['), ws, b.byte(']')}});

  b.set_alternatives(value, {{GrammarBuilder::ref(object)},
                             {GrammarBuilder::ref(array)},
                             {string},
                             {number},
                             b.literal("true"),
                             b.literal("false"),
                             b.literal("null")});
  const uint32_t root = b.sequence({ws, GrammarBuilder::ref(value), ws}, "root");
  return std::move(b).build(root);
}

}  // namespace sluice::grammar::testing
