#pragma once
// The first stage of the regex front end (regex.h): an ECMAScript pattern parsed to a
// tree whose leaves are sets of code points. Lowering the tree is regex_lowering.h.
#include <string_view>
#include <vector>

#include "engine/grammar/codepoint_set.h"
#include "engine/grammar/limits.h"

namespace sluice::grammar {

struct RegexNode {
  enum class Kind : uint8_t { set, sequence, alternation, repeat };
  Kind kind = Kind::sequence;
  CodepointSet set;                 // set: one code point of these (normalized, not empty)
  std::vector<RegexNode> children;  // sequence: in order; alternation: >= 2; repeat: 1
  int min = 0;                      // repeat
  int max = 0;                      // repeat; < 0: unbounded
  size_t offset = 0;                // where in the pattern (bytes), for messages
};

struct ParsedRegex {
  std::vector<RegexNode> alternatives;  // the top-level alternatives, each a sequence
  bool anchored_start = false;          // a leading ^ (it anchors the first alternative only)
  bool anchored_end = false;            // a trailing $ (it anchors the last alternative only)
};

// Throws GrammarError with where() "offset N" for a syntax error, a refused feature
// (backreference, lookaround, \b, flags, ^ or $ not at an end) or a limit.
ParsedRegex parse_regex(std::string_view pattern, const GrammarLimits& limits);

// "offset N", the where() of a regex error.
std::string regex_offset(size_t offset);

}  // namespace sluice::grammar
