// llama.cpp's GBNF lowered to the byte grammar IR; see gbnf.h.
//
// The syntax as llama-server's parser reads it: rules end at a newline, except that
// a newline may follow `::=` and `|`, and anything inside parentheses may span lines;
// spaces, tabs and # comments may appear between any two items; a postfix operator
// applies to the item before it (a whole "literal", a [class], a rule name, a group,
// or a previous repetition); a rule defined twice keeps its last definition. It also
// accepts, where llama.cpp refuses, a repetition whose body can match "" (("a"?)*):
// see repetition.h. Columns count code points, from 1.
#include "engine/grammar/gbnf.h"

#include <charconv>
#include <unordered_map>

#include "engine/grammar/codepoint_set.h"
#include "engine/grammar/grammar_builder.h"
#include "engine/grammar/repetition.h"
#include "engine/grammar/utf8_text.h"

namespace sluice::grammar {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GrammarLimits& limits)
      : text_(text), limits_(limits), budget_(builder_, limits.max_elements) {}

  Grammar parse() {
    if (text_.size() > limits_.max_input_bytes)
      fail(limits_.max_input_bytes, "the grammar is over the limit of " + std::to_string(limits_.max_input_bytes) +
                                        " bytes");
    skip_space(true);
    while (!at_end()) parse_rule();
    for (const auto& [name, offset] : references_)
      if (!defined_at_.contains(name)) fail(offset, "rule '" + name + "' is not defined");
    if (!defined_at_.contains("root")) throw GrammarError("the grammar has no rule named 'root'");
    repetitions_.finish(builder_, budget_, [this](size_t offset) { return where(offset); });
    const uint32_t root = builder_.rule_named("root");
    try {
      return std::move(builder_).build(root, limits_.max_elements);
    } catch (const GrammarError& e) {
      throw with_user_rule(e);
    }
  }

 private:
  // --- positions and errors ---

  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  std::string where(size_t offset) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) {
      const char c = text_[i];
      if (c == '\n' || (c == '\r' && (i + 1 >= text_.size() || text_[i + 1] != '\n'))) {
        ++line;
        column = 1;
      } else if (c != '\r' && (static_cast<uint8_t>(c) & 0xC0) != 0x80) {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    throw GrammarError(message, where(offset));
  }

  std::string describe_here() const {
    if (at_end()) return "the end of the grammar";
    const char c = peek();
    if (c == '\n' || c == '\r') return "the end of the line";
    if (static_cast<uint8_t>(c) < 0x20 || static_cast<uint8_t>(c) >= 0x80) return "this character";
    return std::string("'") + c + "'";
  }

  // A left-recursion error names a rule the parser generated ("expr_group"): name the
  // GBNF rule it came from, where that rule is defined. Generated names are the GBNF
  // rule's name, '_', a suffix; GBNF names cannot hold '_'.
  GrammarError with_user_rule(const GrammarError& e) const {
    const std::string message = e.what();
    const size_t open = message.find("rule '");
    const size_t close = open == std::string::npos ? open : message.find('\'', open + 6);
    if (close == std::string::npos || message.find("left-recursive") == std::string::npos) return e;
    const std::string generated = message.substr(open + 6, close - open - 6);
    const std::string user = generated.substr(0, generated.find('_'));
    auto it = defined_at_.find(user);
    if (it == defined_at_.end()) return e;
    return GrammarError("rule '" + user + "' is left-recursive: it can reach itself before matching a character",
                        where(it->second));
  }

  // --- lexical ---

  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\r' && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) fail(pos_, "expecting a rule name, found " + describe_here());
    return std::string(text_.substr(start, pos_ - start));
  }

  uint32_t parse_hex(size_t escape_at, int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const int digit = hex_value(peek());
      if (digit < 0) {
        std::string message("escape '\\");
        message.append(1, text_[escape_at + 1]).append("' needs ").append(std::to_string(digits)).append(" hex digits");
        fail(escape_at, message);
      }
      value = value * 16 + static_cast<uint32_t>(digit);
      ++pos_;
    }
    if (!utf8::is_scalar(value)) fail(escape_at, "escape names no character: surrogate or past U+10FFFF");
    return value;
  }

  // One character of a literal or class, escapes decoded.
  uint32_t parse_char() {
    const size_t start = pos_;
    if (peek() == '\\') {
      if (pos_ + 1 >= text_.size()) fail(start, "unfinished escape at the end of the grammar");
      const char kind = peek(1);
      pos_ += 2;
      switch (kind) {
        case 'x': return parse_hex(start, 2);
        case 'u': return parse_hex(start, 4);
        case 'U': return parse_hex(start, 8);
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\':
        case '"':
        case '[':
        case ']': return static_cast<uint8_t>(kind);
        default: pos_ = start; fail(start, "unknown escape '\\" + std::string(1, kind) + "'");
      }
    }
    if (auto cp = utf8::decode(text_, pos_)) return *cp;
    fail(start, "invalid UTF-8");
  }

  int parse_count() {
    const size_t start = pos_;
    while (is_digit(peek())) ++pos_;
    if (pos_ == start) fail(pos_, "expecting a number, found " + describe_here());
    int value = 0;
    auto [end, error] = std::from_chars(text_.data() + start, text_.data() + pos_, value);
    if (error != std::errc()) value = limits_.max_repeat + 1;  // too large: refused by the caller
    return value;
  }

  // --- structure ---

  void parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail(pos_, "expecting '::=' after rule name '" + name + "', found " + describe_here());
    pos_ += 3;
    skip_space(true);
    rule_ = name;
    const uint32_t rule = builder_.rule_named(name);
    budget_.sync(builder_);
    defined_at_[name] = start;
    builder_.set_alternatives(rule, parse_alternatives(false));
    budget_.recount(builder_, rule);
    check_budget(start);
    if (peek() == '\r') {
      pos_ += peek(1) == '\n' ? 2 : 1;
    } else if (peek() == '\n') {
      ++pos_;
    } else if (!at_end()) {
      if (peek() == ')') fail(pos_, "')' without a matching '('");
      fail(pos_, "expecting the end of the line, found " + describe_here());
    }
    skip_space(true);
  }

  std::vector<Alternative> parse_alternatives(bool nested) {
    std::vector<Alternative> alternatives{parse_sequence(nested)};
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(nested));
    }
    return alternatives;
  }

  Alternative parse_sequence(bool nested) {
    Alternative sequence;
    size_t last = std::string::npos;  // where the last item's elements start
    while (!at_end()) {
      const size_t start = pos_;
      const char c = peek();
      if (c == '"') {
        last = sequence.size();
        parse_literal(sequence);
      } else if (c == '[') {
        last = sequence.size();
        sequence.push_back(parse_class());
      } else if (is_name_char(c)) {
        const std::string name = parse_name();
        last = sequence.size();
        if (!builder_.has_rule(name)) references_.emplace_back(name, start);
        sequence.push_back(GrammarBuilder::ref(builder_.rule_named(name)));
      } else if (c == '(') {
        last = sequence.size();
        sequence.push_back(parse_group());
      } else if (c == '.') {
        ++pos_;
        last = sequence.size();
        sequence.push_back(sets_.element(builder_, {{0, 0x10FFFF}}, rule_ + "_any"));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        auto [min, max] = parse_postfix();
        if (last == std::string::npos || last == sequence.size())
          fail(start, std::string("nothing before '") + c + "' to repeat");
        apply_repetition(sequence, last, min, max, start);
      } else if (c == '<' || c == '!') {
        fail(start, "token references (<...>) are not supported: grammars here match text");
      } else {
        break;
      }
      skip_space(nested);
    }
    return sequence;
  }

  void parse_literal(Alternative& sequence) {
    const size_t open = pos_++;
    std::string bytes;
    while (peek() != '"') {
      if (at_end()) fail(open, "string literal is never closed");
      tokenizer::utf8::append_codepoint(bytes, parse_char());
    }
    ++pos_;
    const Alternative literal = builder_.literal(bytes);
    sequence.insert(sequence.end(), literal.begin(), literal.end());
  }

  Element parse_class() {
    const size_t open = pos_++;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodepointSet ranges;
    while (peek() != ']') {
      if (at_end()) fail(open, "character class is never closed");
      const uint32_t first = parse_char();
      uint32_t last = first;
      if (peek() == '-' && peek(1) != ']') {
        const size_t dash = pos_++;
        if (at_end()) fail(open, "character class is never closed");
        last = parse_char();
        if (last < first) fail(dash, "range out of order in a character class");
      }
      ranges.emplace_back(first, last);
    }
    ++pos_;
    CodepointSet set = normalize_set(std::move(ranges));
    if (negated) set = complement_set(set);
    if (!has_scalar(set)) fail(open, "character class matches no character");
    return sets_.element(builder_, set, rule_ + "_class");
  }

  Element parse_group() {
    const size_t open = pos_++;
    if (++depth_ > limits_.max_depth)
      fail(open, "groups nested deeper than the limit of " + std::to_string(limits_.max_depth));
    skip_space(true);
    std::vector<Alternative> alternatives = parse_alternatives(true);
    if (peek() != ')') fail(pos_, "expecting ')' to close the group at " + where(open) + ", found " + describe_here());
    ++pos_;
    --depth_;
    const uint32_t group = builder_.add_rule(rule_ + "_group");
    builder_.set_alternatives(group, std::move(alternatives));
    return GrammarBuilder::ref(group);
  }

  // * + ? {m} {m,} {m,n}: the bounds (max < 0: unbounded).
  std::pair<int, int> parse_postfix() {
    const size_t start = pos_;
    const char c = text_[pos_++];
    if (c == '*') return {0, -1};
    if (c == '+') return {1, -1};
    if (c == '?') return {0, 1};
    skip_space(true);
    const int min = parse_count();
    int max = min;
    skip_space(true);
    if (peek() == ',') {
      ++pos_;
      skip_space(true);
      max = is_digit(peek()) ? parse_count() : -1;
      skip_space(true);
    }
    if (peek() != '}') fail(pos_, "expecting '}' to close the repetition, found " + describe_here());
    ++pos_;
    if (min > limits_.max_repeat || max > limits_.max_repeat)
      fail(start, "repetition count over the limit of " + std::to_string(limits_.max_repeat));
    if (max >= 0 && max < min) fail(start, "repetition {m,n} with m greater than n");
    return {min, max};
  }

  void apply_repetition(Alternative& sequence, size_t last, int min, int max, size_t at) {
    Element body = sequence[last];
    if (sequence.size() - last > 1) {
      Alternative item(sequence.begin() + static_cast<std::ptrdiff_t>(last), sequence.end());
      body = GrammarBuilder::ref(builder_.sequence(std::move(item), rule_ + "_item"));
    }
    if (!budget_.can_add(ElementBudget::repeat_cost(min, max))) fail_budget(at);
    const uint32_t repeated = repetitions_.repeat(builder_, body, min, max, rule_ + "_rep", at);
    sequence.resize(last);
    sequence.push_back(GrammarBuilder::ref(repeated));
    check_budget(at);
  }

  void check_budget(size_t at) {
    budget_.sync(builder_);
    if (budget_.is_over()) fail_budget(at);
  }
  [[noreturn]] void fail_budget(size_t at) const {
    fail(at, "the grammar is over the limit of " + std::to_string(limits_.max_elements) + " elements");
  }

  std::string_view text_;
  const GrammarLimits& limits_;
  size_t pos_ = 0;
  GrammarBuilder builder_;
  ElementBudget budget_;
  Repetitions repetitions_;
  CodepointSetElements sets_;
  std::string rule_;  // the rule being defined: generated rules are named after it
  int depth_ = 0;
  std::vector<std::pair<std::string, size_t>> references_;  // first reference to a not-yet-seen name
  std::unordered_map<std::string, size_t> defined_at_;
};

}  // namespace

Grammar parse_gbnf(std::string_view text, const GrammarLimits& limits) {
  return GbnfParser(text, limits).parse();
}

}  // namespace sluice::grammar
