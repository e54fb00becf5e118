// Numbers: any number (RFC 8259), integers in canonical form ("0", "-12", never
// "1.0" or "-0"), and integer ranges as digit grammars, the way regex range
// generators split [lo, hi] into digit-class alternatives per length. Bounds on
// non-integer numbers have no grammar here: unenforceable.
#include <cmath>
#include <limits>

#include "engine/grammar/json_schema_compiler.h"

namespace sluice::grammar::schema {
namespace {

constexpr uint64_t kUnbounded = std::numeric_limits<uint64_t>::max();

class RangeBuilder {
 public:
  explicit RangeBuilder(GrammarBuilder& builder) : builder_(builder) {}

  Element digits(char first, char last) {
    ByteSet set;
    for (char c = first; c <= last; ++c) set.set(static_cast<uint8_t>(c));
    return builder_.bytes(set);
  }

  // Digit strings of one length between lo and hi (same length, lo <= hi), appended
  // to `prefix`: a common digit, or the lo edge, the full middle, the hi edge.
  void same_length(const std::string& lo, const std::string& hi, Alternative prefix, std::vector<Alternative>& out) {
    if (lo.empty()) {
      out.push_back(std::move(prefix));
      return;
    }
    const std::string lo_rest = lo.substr(1), hi_rest = hi.substr(1);
    if (lo[0] == hi[0]) {
      prefix.push_back(digits(lo[0], lo[0]));
      same_length(lo_rest, hi_rest, std::move(prefix), out);
      return;
    }
    const bool lo_full = lo_rest.find_first_not_of('0') == std::string::npos;
    const bool hi_full = hi_rest.find_first_not_of('9') == std::string::npos;
    char first = lo[0], last = hi[0];
    if (!lo_full) {
      Alternative edge = prefix;
      edge.push_back(digits(lo[0], lo[0]));
      same_length(lo_rest, std::string(lo_rest.size(), '9'), std::move(edge), out);
      ++first;
    }
    if (!hi_full) --last;
    if (first <= last) {
      Alternative middle = prefix;
      middle.push_back(digits(first, last));
      for (size_t i = 0; i < lo_rest.size(); ++i) middle.push_back(digits('0', '9'));
      out.push_back(std::move(middle));
    }
    if (!hi_full) {
      Alternative edge = std::move(prefix);
      edge.push_back(digits(hi[0], hi[0]));
      same_length(std::string(hi_rest.size(), '0'), hi_rest, std::move(edge), out);
    }
  }

  // Canonical magnitudes (no leading zero) in [lo, hi]; hi == kUnbounded: no bound.
  void magnitudes(uint64_t lo, uint64_t hi, Alternative prefix, std::vector<Alternative>& out) {
    const std::string a = std::to_string(lo);
    const size_t last_length = hi == kUnbounded ? a.size() : std::to_string(hi).size();
    for (size_t length = a.size(); length <= last_length; ++length) {
      const std::string low = length == a.size() ? a : std::string(1, '1').append(length - 1, '0');
      const std::string high = hi != kUnbounded && length == last_length ? std::to_string(hi) : std::string(length, '9');
      same_length(low, high, prefix, out);
    }
    if (hi == kUnbounded) {  // every longer number: [1-9][0-9]{length}[0-9]*
      Alternative longer = std::move(prefix);
      longer.push_back(digits('1', '9'));
      for (size_t i = 0; i < a.size(); ++i) longer.push_back(digits('0', '9'));
      const uint32_t star = builder_.repeat(digits('0', '9'), 0, -1, "digits0");
      longer.push_back(GrammarBuilder::ref(star));
      out.push_back(std::move(longer));
    }
  }

 private:
  GrammarBuilder& builder_;
};

}  // namespace

uint32_t Compiler::integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi, std::string_view name) {
  RangeBuilder range(builder_);
  std::vector<Alternative> alternatives;
  const auto magnitude = [](int64_t v) { return v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v); };
  if (!lo || *lo < 0) {  // negative: "-" and a magnitude in [max(1, -hi), -lo]
    const uint64_t first = hi && *hi < 0 ? magnitude(*hi) : 1;
    range.magnitudes(first, lo ? magnitude(*lo) : kUnbounded, {builder_.byte('-')}, alternatives);
  }
  if (!hi || *hi >= 0)
    range.magnitudes(lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0, hi ? static_cast<uint64_t>(*hi) : kUnbounded, {},
                     alternatives);
  const uint32_t rule = builder_.add_rule(name);
  builder_.set_alternatives(rule, std::move(alternatives));
  return rule;
}

std::optional<uint32_t> Compiler::compile_numbers(const Node& node, const std::string& pointer) {
  const std::string name = (pointer.empty() ? "root" : pointer) + "-number";
  if (node.types & types::fraction) {
    for (const auto* bound : {&node.lower, &node.upper})
      if (*bound) unenforceable((*bound)->pointer, "a bound on non-integer numbers");
    for (const auto& [m, where] : node.multiple_of) unenforceable(where, "multipleOf");
    if (node.types & types::integer) return number();
    // Not an integer: a fraction with a non-zero digit ("1.5", never "1.0").
    const Element digit = RangeBuilder(builder_).digits('0', '9');
    const uint32_t any_digits = builder_.repeat(digit, 0, -1, "digits0");
    const uint32_t whole = integer_range(0, std::nullopt, "int");
    const uint32_t magnitude = builder_.sequence({GrammarBuilder::ref(whole), builder_.byte('.'), GrammarBuilder::ref(any_digits),
                                                  RangeBuilder(builder_).digits('1', '9'), GrammarBuilder::ref(any_digits)},
                                                 "fraction");
    const uint32_t rule = builder_.add_rule(name);
    builder_.set_alternatives(rule, {{GrammarBuilder::ref(magnitude)}, {builder_.byte('-'), GrammarBuilder::ref(magnitude)}});
    return rule;
  }
  for (const auto& [m, where] : node.multiple_of) {
    const long double inverse = 1.0L / m;
    if (m != 1 && std::floor(inverse) != inverse) unenforceable(where, "multipleOf");  // 1, 0.5, 0.25: every integer
  }
  // The integer bounds, rounded inward; beyond int64 a lower bound cannot be met
  // by a digit grammar we build here, an upper one is no bound.
  constexpr long double kMax = 9.2e18L;
  std::optional<int64_t> lo, hi;
  if (node.lower) {
    const long double v = node.lower->value;
    const long double first = node.lower->exclusive ? std::floor(v) + 1 : std::ceil(v);
    if (first > kMax) unenforceable(node.lower->pointer, "a bound beyond 64-bit integers");
    else if (first > -kMax) lo = static_cast<int64_t>(first);
  }
  if (node.upper) {
    const long double v = node.upper->value;
    const long double last = node.upper->exclusive ? std::ceil(v) - 1 : std::floor(v);
    if (last < -kMax) unenforceable(node.upper->pointer, "a bound beyond 64-bit integers");
    else if (last < kMax) hi = static_cast<int64_t>(last);
  }
  if (lo && hi && *lo > *hi) {
    note_empty("no integer between the bounds", node.lower->pointer);
    return std::nullopt;
  }
  return integer_range(lo, hi, name);
}

}  // namespace sluice::grammar::schema
