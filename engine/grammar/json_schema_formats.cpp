// `format` as grammars of the string content (all ASCII, never escaped): date,
// time and date-time (RFC 3339, leap years included), uuid, email (dot-atom local
// part @ host name), ipv4 (no leading zeros) and hostname (RFC 1123 labels of at most
// 63 characters; the 253-character total is not checked). Any other format: nullopt.
#include "engine/grammar/json_schema_compiler.h"

namespace sluice::grammar::schema {
namespace {

class FormatBuilder {
 public:
  explicit FormatBuilder(GrammarBuilder& builder) : b_(builder) {}

  Element set(std::string_view ranges) {  // "09af": 0-9 and a-f
    ByteSet s;
    for (size_t i = 0; i + 1 < ranges.size(); i += 2)
      for (int c = static_cast<uint8_t>(ranges[i]); c <= static_cast<uint8_t>(ranges[i + 1]); ++c)
        s.set(static_cast<size_t>(c));
    return b_.bytes(s);
  }
  Element digit() { return set("09"); }
  Element hex() { return set("09afAF"); }
  Element rule(std::vector<Alternative> alternatives, std::string_view name) {
    const uint32_t r = b_.add_rule(name);
    b_.set_alternatives(r, std::move(alternatives));
    return GrammarBuilder::ref(r);
  }
  // Two-digit numbers first..last, zero-padded ("01".."12").
  Element two_digits(int first, int last, std::string_view name) {
    std::vector<Alternative> alternatives;
    for (int v = first; v <= last; ++v) alternatives.push_back(b_.literal(std::string{char('0' + v / 10), char('0' + v % 10)}));
    return rule(std::move(alternatives), name);
  }
  Element repeat(Element e, int count) {
    Alternative out(static_cast<size_t>(count), e);
    return GrammarBuilder::ref(b_.sequence(std::move(out), "fmt-repeat"));
  }
  Alternative join(std::initializer_list<Alternative> parts) {
    Alternative out;
    for (const Alternative& part : parts) out.insert(out.end(), part.begin(), part.end());
    return out;
  }
  Alternative lit(std::string_view text) { return b_.literal(text); }

  Element date() {
    const Element d = digit();
    std::vector<Alternative> month_day;
    const Element day31 = two_digits(1, 31, "fmt-day31"), day30 = two_digits(1, 30, "fmt-day30");
    for (const char* month : {"01", "03", "05", "07", "08", "10", "12"}) month_day.push_back(join({lit(month), lit("-"), {day31}}));
    for (const char* month : {"04", "06", "09", "11"}) month_day.push_back(join({lit(month), lit("-"), {day30}}));
    month_day.push_back(join({lit("02-"), {two_digits(1, 28, "fmt-day28")}}));
    // Leap years: divisible by 4 and not by 100, or by 400.
    std::vector<Alternative> by_four, by_four_not_zero;
    for (int v = 0; v < 100; v += 4) {
      const std::string two{char('0' + v / 10), char('0' + v % 10)};
      by_four.push_back(lit(two));
      if (v) by_four_not_zero.push_back(lit(two));
    }
    const Element leap = rule({{d, d, rule(std::move(by_four_not_zero), "fmt-year-leap-tail")},
                               join({{rule(std::move(by_four), "fmt-year-leap-century")}, lit("00")})},
                              "fmt-leap-year");
    return rule({join({{repeat(d, 4)}, lit("-"), {rule(std::move(month_day), "fmt-month-day")}}),
                 join({{leap}, lit("-02-29")})},
                "fmt-date");
  }

  Element time() {
    const Element hour = two_digits(0, 23, "fmt-hour"), minute = two_digits(0, 59, "fmt-minute");
    const Element second = two_digits(0, 60, "fmt-second");  // 60: a leap second
    const Element fraction = rule({{}, {b_.byte('.'), GrammarBuilder::ref(b_.repeat(digit(), 1, -1, "fmt-digits"))}}, "fmt-fraction");
    const Element offset = rule({{set("ZZzz")}, {set("++--"), hour, b_.byte(':'), minute}}, "fmt-offset");
    return rule({{hour, b_.byte(':'), minute, b_.byte(':'), second, fraction, offset}}, "fmt-time");
  }

  Element uuid() {
    const Element h = hex();
    return rule({join({{repeat(h, 8)}, lit("-"), {repeat(h, 4)}, lit("-"), {repeat(h, 4)}, lit("-"), {repeat(h, 4)},
                       lit("-"), {repeat(h, 12)}})},
                "fmt-uuid");
  }

  Element ipv4() {
    const Element d = digit();
    const Element octet = rule({join({lit("25"), {set("05")}}), {b_.byte('2'), set("04"), d}, {b_.byte('1'), d, d},
                                {set("19"), d}, {d}},
                               "fmt-octet");
    return rule({{octet, b_.byte('.'), octet, b_.byte('.'), octet, b_.byte('.'), octet}}, "fmt-ipv4");
  }

  Element hostname() {
    const Element alnum = set("09AZaz");
    const Element inner = GrammarBuilder::ref(b_.repeat(set("09AZaz--"), 0, 61, "fmt-label-inner"));
    const Element label = rule({{alnum}, {alnum, inner, alnum}}, "fmt-label");
    const Element more = GrammarBuilder::ref(b_.repeat(GrammarBuilder::ref(b_.sequence({b_.byte('.'), label}, "fmt-dot-label")), 0, -1, "fmt-labels"));
    return rule({{label, more}}, "fmt-hostname");
  }

  Element email(Element host) {
    // RFC 5322 dot-atom: atext characters, dots only between them.
    const Element atext = set("AZaz09!!##$$%%&&''**++--//==??^^__``{{||}}~~");
    const Element atom = GrammarBuilder::ref(b_.repeat(atext, 1, -1, "fmt-atom"));
    const Element atoms = GrammarBuilder::ref(b_.repeat(GrammarBuilder::ref(b_.sequence({b_.byte('.'), atom}, "fmt-dot-atom")), 0, -1, "fmt-atoms"));
    return rule({{atom, atoms, b_.byte('@'), host}}, "fmt-email");
  }

 private:
  GrammarBuilder& b_;
};

}  // namespace

std::optional<uint32_t> Compiler::format_rule(const std::string& format) {
  if (auto it = formats_.find(format); it != formats_.end()) return it->second;
  FormatBuilder f(builder_);
  std::optional<Element> e;
  if (format == "date") e = f.date();
  else if (format == "time") e = f.time();
  else if (format == "date-time") e = f.rule({{f.date(), f.set("TTtt"), f.time()}}, "fmt-date-time");
  else if (format == "uuid") e = f.uuid();
  else if (format == "ipv4") e = f.ipv4();
  else if (format == "hostname") e = f.hostname();
  else if (format == "email") e = f.email(f.hostname());
  if (!e) return std::nullopt;
  formats_.emplace(format, e->index);
  return e->index;
}

}  // namespace sluice::grammar::schema
