#pragma once
// The grammar IR of constrained decoding: a context-free grammar over BYTES.
//
// Every front end (GBNF, regex, JSON Schema, choice) lowers to this; the matcher
// (matcher.h) runs it. Working on bytes rather than code points lets a token's
// byte string be matched as it is, whatever UTF-8 character boundaries it cuts:
// a code point class becomes the alternatives of its UTF-8 byte sequences
// (GrammarBuilder::codepoints).
//
// A rule is a list of alternatives, each a sequence of elements; an element is a
// byte class (a set of byte values, consumed one byte at a time) or a reference to
// another rule. An empty alternative matches the empty string. Repetition is
// lowered to rules by GrammarBuilder. Left recursion (a rule that can reach itself
// without consuming a byte) is refused by validate().
#include <bitset>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::grammar {

// A grammar that cannot be built or compiled. `where` says where in the input:
// "line 3, column 7" for GBNF, "/properties/name/pattern" for a JSON Schema (a JSON
// pointer into the schema), "offset 4" for a regex; empty when it is the whole input.
class GrammarError : public std::runtime_error {
 public:
  GrammarError(std::string message, std::string where = {})
      : std::runtime_error(where.empty() ? message : where + ": " + message), where_(std::move(where)) {}
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

using ByteSet = std::bitset<256>;

struct Element {
  enum class Kind : uint8_t { bytes, rule };
  Kind kind = Kind::bytes;
  uint32_t index = 0;  // into Grammar::byte_sets (bytes) or Grammar::rules (rule)

  bool operator==(const Element&) const = default;
};

using Alternative = std::vector<Element>;

struct Rule {
  std::string name;  // for messages and debugging; unique within a grammar
  std::vector<Alternative> alternatives;
};

struct Grammar {
  std::vector<Rule> rules;
  std::vector<ByteSet> byte_sets;  // deduplicated by the builder
  uint32_t root = 0;               // the rule a whole output must match

  // Throws GrammarError when a rule reference is out of range, a rule has no
  // alternative, a rule is left-recursive (names the rule), or the grammar is over
  // `max_elements` elements in all.
  void validate(size_t max_elements = 1u << 20) const;
  size_t num_elements() const;
};

// For each rule: can it match the empty string. Linear in the size of the rules (a
// worklist, not repeated passes, which are quadratic on a long chain of rules). Every
// rule reference must be in range.
std::vector<char> nullable_rules(const std::vector<Rule>& rules);

}  // namespace sluice::grammar
