// The JSON pieces every schema is built of: whitespace, string characters (a code
// point or an escape), strings, numbers per RFC 8259, any value, and literals
// serialized the way the grammar emits them.
#include <cmath>
#include <cstdio>

#include "engine/grammar/json_schema_compiler.h"

namespace sluice::grammar::schema {
namespace {

ByteSet byte_range(std::string_view ranges) {  // "09af": 0-9 and a-f
  ByteSet set;
  for (size_t i = 0; i + 1 < ranges.size(); i += 2)
    for (int b = static_cast<uint8_t>(ranges[i]); b <= static_cast<uint8_t>(ranges[i + 1]); ++b)
      set.set(static_cast<size_t>(b));
  return set;
}

void dump_into(const Json& value, std::string& out) {
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isfinite(d) && std::floor(d) == d) {  // every digit of the double's exact value
      char buffer[400];
      std::snprintf(buffer, sizeof buffer, "%.0f", d == 0 ? 0.0 : d);
      out += buffer;
      return;
    }
  }
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& item : value.items()) {
      if (!first) out += ',';
      first = false;
      out += Json(item.key()).dump();
      out += ':';
      dump_into(item.value(), out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (size_t i = 0; i < value.size(); ++i) {
      if (i) out += ',';
      dump_into(value[i], out);
    }
    out += ']';
  } else {
    out += value.dump();
  }
}

}  // namespace

uint64_t count_code_points(std::string_view text) {
  uint64_t n = 0;
  for (char c : text)
    if ((static_cast<uint8_t>(c) & 0xC0) != 0x80) ++n;
  return n;
}

bool json_equal(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_number_float() || b.is_number_float()) return a.get<long double>() == b.get<long double>();
    if (a.is_number_unsigned() != b.is_number_unsigned())
      return a.get<long double>() == b.get<long double>();  // only equal when both fit
    return a == b;
  }
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!json_equal(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& item : a.items()) {
      auto it = b.find(item.key());
      if (it == b.end() || !json_equal(item.value(), *it)) return false;
    }
    return true;
  }
  return a == b;
}

std::string canonical_dump(const Json& value) {
  std::string out;
  dump_into(value, out);
  return out;
}

Alternative& Compiler::ws(Alternative& out) {
  if (!options_.any_whitespace) return out;
  if (!ws_) ws_ = builder_.repeat(builder_.bytes(byte_range("  \t\t\n\n\r\r")), 0, -1, "ws");
  out.push_back(GrammarBuilder::ref(*ws_));
  return out;
}

Alternative Compiler::token(std::string_view text) { return builder_.literal(text); }

uint32_t Compiler::string_char() {
  if (string_char_) return *string_char_;
  const uint32_t unescaped = builder_.codepoints({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}}, false, "char-plain");
  const Element backslash = builder_.byte('\\'), u = builder_.byte('u');
  const Element hex = builder_.bytes(byte_range("09afAF"));
  const Element d = builder_.bytes(byte_range("ddDD"));
  // \uXXXX outside the surrogates, or a high surrogate escape followed by a low one
  // (one code point); a lone surrogate is not a character.
  std::vector<Alternative> alternatives{
      {GrammarBuilder::ref(unescaped)},
      {backslash, builder_.bytes(byte_range("\"\"\\\\//bbffnnrrtt"))},
      {backslash, u, builder_.bytes(byte_range("09acefACEF")), hex, hex, hex},
      {backslash, u, d, builder_.bytes(byte_range("07")), hex, hex},
      {backslash, u, d, builder_.bytes(byte_range("89abAB")), hex, hex, backslash, u, d,
       builder_.bytes(byte_range("cfCF")), hex, hex},
  };
  string_char_ = builder_.add_rule("char");
  builder_.set_alternatives(*string_char_, std::move(alternatives));
  return *string_char_;
}

uint32_t Compiler::any_string() {
  if (any_string_) return *any_string_;
  const uint32_t content = builder_.repeat(GrammarBuilder::ref(string_char()), 0, -1, "string-content");
  Alternative body = token("\"");
  body.push_back(GrammarBuilder::ref(content));
  body.push_back(builder_.byte('"'));
  any_string_ = builder_.sequence(std::move(body), "string");
  return *any_string_;
}

uint32_t Compiler::number() {
  if (number_) return *number_;
  const Element digit = builder_.bytes(byte_range("09"));
  const uint32_t digits = builder_.repeat(digit, 1, -1, "digits");
  const uint32_t more = builder_.repeat(digit, 0, -1, "digits0");
  const uint32_t integral = builder_.add_rule("int");
  builder_.set_alternatives(integral, {{builder_.byte('0')}, {builder_.bytes(byte_range("19")), GrammarBuilder::ref(more)}});
  const uint32_t fraction = builder_.add_rule("frac");
  builder_.set_alternatives(fraction, {{}, {builder_.byte('.'), GrammarBuilder::ref(digits)}});
  const uint32_t exponent = builder_.add_rule("exp");
  const uint32_t sign = builder_.add_rule("exp-sign");
  builder_.set_alternatives(sign, {{}, {builder_.bytes(byte_range("++--"))}});
  builder_.set_alternatives(exponent, {{}, {builder_.bytes(byte_range("eeEE")), GrammarBuilder::ref(sign), GrammarBuilder::ref(digits)}});
  number_ = builder_.add_rule("number");
  const Alternative tail{GrammarBuilder::ref(integral), GrammarBuilder::ref(fraction), GrammarBuilder::ref(exponent)};
  Alternative negative{builder_.byte('-')};
  negative.insert(negative.end(), tail.begin(), tail.end());
  builder_.set_alternatives(*number_, {tail, negative});
  return *number_;
}

uint32_t Compiler::any_value() {
  if (any_value_) return *any_value_;
  any_value_ = builder_.add_rule("value");
  const Element value = GrammarBuilder::ref(*any_value_);
  const Element string = GrammarBuilder::ref(any_string());
  // object ::= "{" ws ( member (ws "," ws member)* ws )? "}" ; member ::= string ws ":" ws value
  Alternative member_body{string};
  ws(member_body).push_back(builder_.byte(':'));
  ws(member_body).push_back(value);
  const uint32_t member = builder_.sequence(std::move(member_body), "member");
  Alternative next;
  ws(next).push_back(builder_.byte(','));
  ws(next).push_back(GrammarBuilder::ref(member));
  const uint32_t members = builder_.repeat(GrammarBuilder::ref(builder_.sequence(next, "member-next")), 0, -1, "members");
  Alternative open_object{builder_.byte('{')};
  ws(open_object);
  Alternative filled_object = open_object;
  filled_object.push_back(GrammarBuilder::ref(member));
  filled_object.push_back(GrammarBuilder::ref(members));
  ws(filled_object).push_back(builder_.byte('}'));
  open_object.push_back(builder_.byte('}'));
  const uint32_t object = builder_.add_rule("object");
  builder_.set_alternatives(object, {open_object, filled_object});
  // array ::= "[" ws ( value (ws "," ws value)* ws )? "]"
  Alternative next_item;
  ws(next_item).push_back(builder_.byte(','));
  ws(next_item).push_back(value);
  const uint32_t items = builder_.repeat(GrammarBuilder::ref(builder_.sequence(next_item, "item-next")), 0, -1, "items");
  Alternative open_array{builder_.byte('[')};
  ws(open_array);
  Alternative filled_array = open_array;
  filled_array.push_back(value);
  filled_array.push_back(GrammarBuilder::ref(items));
  ws(filled_array).push_back(builder_.byte(']'));
  open_array.push_back(builder_.byte(']'));
  const uint32_t array = builder_.add_rule("array");
  builder_.set_alternatives(array, {open_array, filled_array});
  builder_.set_alternatives(*any_value_, {{GrammarBuilder::ref(object)},
                                          {GrammarBuilder::ref(array)},
                                          {string},
                                          {GrammarBuilder::ref(number())},
                                          token("true"),
                                          token("false"),
                                          token("null")});
  return *any_value_;
}

void Compiler::append_literal(const Json& value, Alternative& out) {
  const auto append = [&](std::string_view text) {
    for (char c : text) out.push_back(builder_.byte(static_cast<uint8_t>(c)));
  };
  if (value.is_object()) {
    append("{");
    ws(out);
    bool first = true;
    for (const auto& item : value.items()) {
      if (!first) {
        ws(out);
        append(",");
        ws(out);
      }
      first = false;
      append(Json(item.key()).dump());
      ws(out);
      append(":");
      ws(out);
      append_literal(item.value(), out);
    }
    if (!value.empty()) ws(out);
    append("}");
  } else if (value.is_array()) {
    append("[");
    ws(out);
    for (size_t i = 0; i < value.size(); ++i) {
      if (i) {
        ws(out);
        append(",");
        ws(out);
      }
      append_literal(value[i], out);
    }
    if (!value.empty()) ws(out);
    append("]");
  } else {
    append(canonical_dump(value));
  }
}

}  // namespace sluice::grammar::schema
