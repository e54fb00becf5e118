#include "engine/chat/jinja/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace sluice::chat::text {
namespace {

// The code point starting at s[i] and its length in bytes; a bad byte decodes as itself.
std::pair<char32_t, size_t> decode(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return {b0, 1};
  char32_t c = len == 1 ? b0 : len == 2 ? (b0 & 0x1F) : len == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b >> 6) != 0x2) return {b0, 1};
    c = (c << 6) | (b & 0x3F);
  }
  return {c, len};
}

bool is_strip_char(std::string_view ch, const std::optional<std::string>& set) {
  if (!set) return is_space(decode(ch, 0).first);
  for (std::string_view c : chars(*set)) {
    if (c == ch) return true;
  }
  return false;
}

char ascii_upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }
char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

std::vector<std::string_view> chars(std::string_view s) {
  std::vector<std::string_view> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t len = decode(s, i).second;
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += decode(s, i).second) ++n;
  return n;
}

std::string strip(std::string_view s, const std::optional<std::string>& set, bool left, bool right) {
  const std::vector<std::string_view> cs = chars(s);
  size_t begin = 0;
  size_t end = cs.size();
  while (left && begin < end && is_strip_char(cs[begin], set)) ++begin;
  while (right && end > begin && is_strip_char(cs[end - 1], set)) --end;
  if (begin == end) return {};
  const size_t from = static_cast<size_t>(cs[begin].data() - s.data());
  const size_t to = static_cast<size_t>(cs[end - 1].data() - s.data()) + cs[end - 1].size();
  return std::string(s.substr(from, to - from));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit,
                               bool from_right) {
  std::vector<std::string> out;
  if (sep) {
    std::string_view rest = s;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t at = from_right ? rest.rfind(*sep) : rest.find(*sep);
      if (at == std::string_view::npos) break;
      if (from_right) {
        out.emplace_back(rest.substr(at + sep->size()));
        rest = rest.substr(0, at);
      } else {
        out.emplace_back(rest.substr(0, at));
        rest = rest.substr(at + sep->size());
      }
    }
    out.emplace_back(rest);
    if (from_right) std::reverse(out.begin(), out.end());
    return out;
  }
  // Whitespace runs separate words; the unsplit remainder keeps its inner spacing.
  std::vector<std::string_view> cs = chars(s);
  if (from_right) std::reverse(cs.begin(), cs.end());
  auto space = [&](size_t i) { return is_space(decode(cs[i], 0).first); };
  size_t i = 0;
  while (i < cs.size()) {
    while (i < cs.size() && space(i)) ++i;
    if (i == cs.size()) break;
    size_t j = i;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      j = cs.size();  // the unsplit remainder, trailing spaces and all
    } else {
      while (j < cs.size() && !space(j)) ++j;
    }
    std::string word;
    if (from_right) {
      for (size_t k = j; k > i; --k) word += cs[k - 1];
    } else {
      for (size_t k = i; k < j; ++k) word += cs[k];
    }
    out.push_back(std::move(word));
    i = j;
  }
  if (from_right) std::reverse(out.begin(), out.end());
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    for (std::string_view c : chars(s)) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      out += c;
    }
    if (count < 0 || done < count) out += with;
    return out;
  }
  size_t pos = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(old, pos);
    if (at == std::string_view::npos) break;
    out.append(s.substr(pos, at - pos)).append(with);
    pos = at + old.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ascii_upper(c);
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out = lower(s);
  if (!out.empty()) out[0] = ascii_upper(out[0]);
  return out;
}

std::string title(std::string_view s) {
  std::string out;
  bool word_start = true;
  for (std::string_view c : chars(s)) {
    const bool sep = is_space(decode(c, 0).first) || c == "-" || c == "(" || c == "{" || c == "[" || c == "<";
    if (sep) {
      out += c;
      word_start = true;
    } else if (word_start) {
      out += upper(c);
      word_start = false;
    } else {
      out += lower(c);
    }
  }
  return out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  out += quote;
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);  // [-]d[.ddd]e±XX
  const size_t e_at = sci.find('e');
  const int exponent = std::stoi(sci.substr(e_at + 1));
  const bool negative = sci[0] == '-';
  std::string digits;
  for (char c : sci.substr(0, e_at)) {
    if (c >= '0' && c <= '9') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent) + 1) + "." +
             digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', exponent < 0 ? -exponent : exponent);
  return out + exp_buf;
}

}  // namespace sluice::chat::text
