// ECMAScript pattern -> RegexNode tree; see regex_parser.h.
//
// Unicode-mode semantics (the `u` flag, which JSON Schema's 2020-12 draft asks for):
// the pattern and the text are code points, \u{...} and surrogate pairs name one
// code point, and an escaped letter that means nothing is an error rather than the
// letter. Like Annex B, a lone ] or } is a literal; a { that starts no quantifier is an
// error (Annex B would read it as a literal, Python's re reads {,n} as a quantifier:
// refusing is the reading nobody can misunderstand).
#include "engine/grammar/regex_parser.h"

#include <set>
#include <string>

#include "engine/grammar/grammar.h"
#include "engine/grammar/utf8_text.h"

namespace sluice::grammar {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ascii_alnum(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

const CodepointSet kDigit = {{'0', '9'}};
const CodepointSet kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMAScript's WhiteSpace and LineTerminator.
const CodepointSet kSpace = {{0x09, 0x0D}, {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                             {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// `.` without the s flag: anything but a line terminator.
const CodepointSet kLineTerminators = {{0x0A, 0x0A}, {0x0D, 0x0D}, {0x2028, 0x2029}};

RegexNode set_node(CodepointSet set, size_t offset) {
  RegexNode node;
  node.kind = RegexNode::Kind::set;
  node.set = std::move(set);
  node.offset = offset;
  return node;
}

// What one escape or character in a class stands for: a code point or a set (\d).
struct ClassAtom {
  CodepointSet set;
  bool is_single = false;
  uint32_t cp = 0;
};

class RegexParser {
 public:
  RegexParser(std::string_view pattern, const GrammarLimits& limits) : p_(pattern), limits_(limits) {}

  ParsedRegex parse() {
    if (p_.size() > limits_.max_input_bytes)
      fail(limits_.max_input_bytes,
           "the pattern is over the limit of " + std::to_string(limits_.max_input_bytes) + " bytes");
    ParsedRegex result;
    if (peek() == '^') {
      result.anchored_start = true;
      ++pos_;
    }
    result.alternatives.push_back(parse_sequence(&result.anchored_end));
    while (peek() == '|') {
      ++pos_;
      result.alternatives.push_back(parse_sequence(&result.anchored_end));
    }
    if (!at_end()) fail(pos_, "')' without a matching '('");
    return result;
  }

 private:
  bool at_end() const { return pos_ >= p_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0'; }
  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    throw GrammarError(message, regex_offset(offset));
  }

  // `anchored_end` is set by a $ that ends the pattern; only the top level passes it.
  RegexNode parse_sequence(bool* anchored_end) {
    RegexNode sequence;
    sequence.offset = pos_;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        if (anchored_end == nullptr || pos_ + 1 != p_.size())
          fail(pos_, "'$' is supported only at the very end of the pattern");
        *anchored_end = true;
        ++pos_;
        break;
      }
      if (peek() == '^') fail(pos_, "'^' is supported only at the very start of the pattern");
      RegexNode atom = parse_atom();
      parse_quantifier(atom);
      sequence.children.push_back(std::move(atom));
    }
    return sequence;
  }

  RegexNode parse_disjunction() {
    RegexNode first = parse_sequence(nullptr);
    if (peek() != '|') return first;
    RegexNode alternation;
    alternation.kind = RegexNode::Kind::alternation;
    alternation.offset = first.offset;
    alternation.children.push_back(std::move(first));
    while (peek() == '|') {
      ++pos_;
      alternation.children.push_back(parse_sequence(nullptr));
    }
    return alternation;
  }

  RegexNode parse_atom() {
    const size_t start = pos_;
    const char c = peek();
    switch (c) {
      case '(': return parse_group();
      case '[': return parse_class();
      case '.': ++pos_; return set_node(complement_set(kLineTerminators), start);
      case '\\': {
        ClassAtom atom = parse_escape(false);
        return set_node(atom.is_single ? CodepointSet{{atom.cp, atom.cp}} : std::move(atom.set), start);
      }
      case '*':
      case '+':
      case '?': fail(start, std::string("nothing to repeat before '") + c + "'");
      case '{':
        if (quantifier_length(pos_) > 0) fail(start, "nothing to repeat before '{'");
        fail(start, "a '{' that starts no quantifier {m}, {m,} or {m,n} must be escaped as \\{");
      default: break;
    }
    if (auto cp = utf8::decode(p_, pos_)) return set_node({{*cp, *cp}}, start);
    fail(start, "invalid UTF-8");
  }

  RegexNode parse_group() {
    const size_t open = pos_++;
    if (peek() == '?') {
      const char kind = peek(1);
      if (kind == ':') {
        pos_ += 2;
      } else if (kind == '=' || kind == '!') {
        fail(open, "lookahead (?= and (?! is not supported");
      } else if (kind == '<' && (peek(2) == '=' || peek(2) == '!')) {
        fail(open, "lookbehind (?<= and (?<! is not supported");
      } else if (kind == '<') {
        pos_ += 2;
        parse_group_name(open);
      } else {
        fail(open, "unsupported group '(?': only (?: and (?<name> are (no flags, no lookaround)");
      }
    }
    if (++depth_ > limits_.max_depth)
      fail(open, "groups nested deeper than the limit of " + std::to_string(limits_.max_depth));
    RegexNode inner = parse_disjunction();
    if (peek() != ')') fail(open, "group is never closed");
    ++pos_;
    --depth_;
    return inner;
  }

  void parse_group_name(size_t open) {
    const size_t start = pos_;
    while (!at_end() && (is_ascii_alnum(peek()) || peek() == '_' || peek() == '$')) ++pos_;
    if (pos_ == start || is_digit(p_[start]) || peek() != '>') fail(open, "invalid group name in (?<name>");
    if (!group_names_.emplace(p_.substr(start, pos_ - start)).second) fail(open, "duplicate group name");
    ++pos_;
  }

  // Bytes of a {m}, {m,} or {m,n} quantifier at `at`, or 0 when there is none.
  size_t quantifier_length(size_t at) const {
    size_t i = at + 1;
    const size_t digits = i;
    while (i < p_.size() && is_digit(p_[i])) ++i;
    if (i == digits) return 0;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      while (i < p_.size() && is_digit(p_[i])) ++i;
    }
    return i < p_.size() && p_[i] == '}' ? i + 1 - at : 0;
  }

  int parse_number() {
    long long value = 0;
    for (; is_digit(peek()); ++pos_) value = std::min<long long>(value * 10 + (peek() - '0'), 1LL << 40);
    return static_cast<int>(std::min<long long>(value, limits_.max_repeat + 1LL));
  }

  void parse_quantifier(RegexNode& atom) {
    const size_t start = pos_;
    int min = 0, max = 0;
    switch (peek()) {
      case '*': min = 0, max = -1, ++pos_; break;
      case '+': min = 1, max = -1, ++pos_; break;
      case '?': min = 0, max = 1, ++pos_; break;
      case '{': {
        if (quantifier_length(pos_) == 0)
          fail(start, "a '{' that starts no quantifier {m}, {m,} or {m,n} must be escaped as \\{");
        ++pos_;
        min = max = parse_number();
        if (peek() == ',') {
          ++pos_;
          max = is_digit(peek()) ? parse_number() : -1;
        }
        ++pos_;  // '}'
        if (min > limits_.max_repeat || max > limits_.max_repeat)
          fail(start, "repetition count over the limit of " + std::to_string(limits_.max_repeat));
        if (max >= 0 && max < min) fail(start, "numbers out of order in {m,n}");
        break;
      }
      default: return;
    }
    if (peek() == '?') ++pos_;  // lazy: the same strings
    const char next = peek();
    if (next == '*' || next == '+' || next == '?' || (next == '{' && quantifier_length(pos_) > 0))
      fail(pos_, std::string("nothing to repeat before '") + next + "'");
    RegexNode repeat;
    repeat.kind = RegexNode::Kind::repeat;
    repeat.min = min;
    repeat.max = max;
    repeat.offset = start;
    repeat.children.push_back(std::move(atom));
    atom = std::move(repeat);
  }

  RegexNode parse_class() {
    const size_t open = pos_++;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodepointSet members;
    while (true) {
      if (at_end()) fail(open, "class '[' is never closed");
      if (peek() == ']') break;
      ClassAtom first = parse_class_atom();
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < p_.size()) {
        const size_t dash = pos_++;
        ClassAtom last = parse_class_atom();
        if (!first.is_single || !last.is_single)
          fail(dash, "a range in a class needs a character at each end, not a class escape like \\d");
        if (last.cp < first.cp) fail(dash, "range out of order in a class");
        members.emplace_back(first.cp, last.cp);
      } else if (first.is_single) {
        members.emplace_back(first.cp, first.cp);
      } else {
        members.insert(members.end(), first.set.begin(), first.set.end());
      }
    }
    ++pos_;
    CodepointSet set = normalize_set(std::move(members));
    if (negated) set = complement_set(set);
    if (!has_scalar(set)) fail(open, "class matches no character");
    return set_node(std::move(set), open);
  }

  ClassAtom parse_class_atom() {
    if (peek() == '\\') return parse_escape(true);
    const size_t start = pos_;
    if (auto cp = utf8::decode(p_, pos_)) return {{}, true, *cp};
    fail(start, "invalid UTF-8");
  }

  uint32_t parse_hex_digits(size_t escape_at, int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i, ++pos_) {
      const int digit = hex_value(peek());
      if (digit < 0) {
        std::string message(1, '\\');
        message.append(1, p_[escape_at + 1]).append(" needs ").append(std::to_string(digits)).append(" hex digits");
        fail(escape_at, message);
      }
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    return value;
  }

  uint32_t parse_unicode_escape(size_t start) {
    uint32_t cp = 0;
    if (peek() == '{') {
      ++pos_;
      const size_t first = pos_;
      for (; hex_value(peek()) >= 0; ++pos_) {
        cp = cp * 16 + static_cast<uint32_t>(hex_value(peek()));
        if (cp > 0x10FFFF) fail(start, "\\u{...} past U+10FFFF");
      }
      if (pos_ == first || peek() != '}') fail(start, "\\u{...} needs hex digits and a closing '}'");
      ++pos_;
    } else {
      cp = parse_hex_digits(start, 4);
      // A surrogate pair written as two escapes is one code point.
      if (cp >= 0xD800 && cp <= 0xDBFF && peek() == '\\' && peek(1) == 'u' && peek(2) != '{') {
        const size_t saved = pos_;
        pos_ += 2;
        const uint32_t low = parse_hex_digits(saved, 4);
        if (low >= 0xDC00 && low <= 0xDFFF) return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        pos_ = saved;
      }
    }
    if (!utf8::is_scalar(cp)) fail(start, "a lone surrogate cannot be matched in UTF-8 text");
    return cp;
  }

  ClassAtom parse_escape(bool in_class) {
    const size_t start = pos_;
    if (pos_ + 1 >= p_.size()) fail(start, "the pattern ends with a lone backslash");
    const char c = p_[pos_ + 1];
    pos_ += 2;
    auto single = [](uint32_t cp) { return ClassAtom{{}, true, cp}; };
    switch (c) {
      case 'd': return {kDigit};
      case 'D': return {complement_set(kDigit)};
      case 'w': return {kWord};
      case 'W': return {complement_set(kWord)};
      case 's': return {kSpace};
      case 'S': return {complement_set(kSpace)};
      case 'n': return single('\n');
      case 'r': return single('\r');
      case 't': return single('\t');
      case 'f': return single('\f');
      case 'v': return single('\v');
      case '0':
        if (is_digit(peek())) fail(start, "octal escapes are not supported");
        return single(0);
      case 'b':
        if (in_class) return single('\b');
        fail(start, "word boundaries (\\b) are not supported");
      case 'B': fail(start, "word boundaries (\\B) are not supported");
      case 'k': fail(start, "named backreferences (\\k<name>) are not supported");
      case 'x': return single(parse_hex_digits(start, 2));
      case 'u': return single(parse_unicode_escape(start));
      case 'c': {
        const char letter = peek();
        if (!((letter >= 'a' && letter <= 'z') || (letter >= 'A' && letter <= 'Z')))
          fail(start, "\\c needs a letter");
        ++pos_;
        return single(static_cast<uint32_t>(letter) % 32);
      }
      case 'p':
      case 'P': fail(start, "Unicode property escapes (\\p{...}) are not supported");
      default: break;
    }
    if (c >= '1' && c <= '9') fail(start, "backreferences are not supported");
    if (is_ascii_alnum(c)) fail(start, "unknown escape '\\" + std::string(1, c) + "'");
    // An escaped punctuation mark or other character stands for itself.
    pos_ = start + 1;
    if (auto cp = utf8::decode(p_, pos_)) return single(*cp);
    fail(start, "invalid UTF-8");
  }

  std::string_view p_;
  const GrammarLimits& limits_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::set<std::string_view> group_names_;
};

}  // namespace

std::string regex_offset(size_t offset) { return "offset " + std::to_string(offset); }

ParsedRegex parse_regex(std::string_view pattern, const GrammarLimits& limits) {
  return RegexParser(pattern, limits).parse();
}

}  // namespace sluice::grammar
