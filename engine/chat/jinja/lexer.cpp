#include "engine/chat/jinja/lexer.h"

#include <algorithm>
#include <array>

#include "engine/chat/jinja/text.h"
#include "engine/tokenizer/utf8.h"

namespace sluice::chat {
namespace {

// Longest first, so that "//" wins over "/".
constexpr std::array<std::string_view, 26> kOperators = {
    "//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{",
    "}",  ">",  "<",  "=",  ".",  ":",  "|", ",", ";"};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Jinja's source normalization: \r\n and \r become \n; one trailing newline goes.
std::string normalize(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexerOptions& options) : src_(normalize(source)), options_(options) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      const size_t open = find_open(pos);
      if (open == std::string::npos) {
        emit_text(src_.substr(pos), pos);
        break;
      }
      const char kind = src_[open + 1];
      size_t after = open + 2;
      char sign = 0;
      if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after++];
      size_t raw_body = 0;
      const bool raw = kind == '%' && match_raw_begin(after, raw_body);
      emit_text(strip_before_tag(src_.substr(pos, open - pos), sign, kind != '{'), pos);
      line_starting_ = false;
      if (kind == '#') {
        pos = lex_comment(open, after);
      } else if (raw) {
        pos = lex_raw(open, raw_body);
      } else {
        pos = lex_tag(open, after, kind == '%');
      }
    }
    tokens_.push_back(Token{Token::Type::End, "", 0, 0, pos_at(src_.size())});
    return std::move(tokens_);
  }

 private:
  SourcePos pos_at(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    return SourcePos{static_cast<uint32_t>(it - line_starts_.begin() + 1),
                     static_cast<uint32_t>(offset - *it + 1)};
  }

  [[noreturn]] void fail(size_t offset, const std::string& reason) const {
    throw TemplateSyntaxError(pos_at(offset), reason);
  }

  size_t find_open(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // `{%-` strips all whitespace before the tag; otherwise lstrip_blocks strips the
  // indentation of a block or comment tag that starts its line.
  std::string strip_before_tag(std::string text, char sign, bool is_block_or_comment) const {
    if (sign == '-') return text::strip(text, std::nullopt, false, true);
    if (sign == '+' || !options_.lstrip_blocks || !is_block_or_comment) return text;
    const size_t line_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
    if ((line_pos > 0 || line_starting_) && line_pos < text.size() &&
        text::strip(std::string_view(text).substr(line_pos), std::nullopt, true, false).empty()) {
      text.resize(line_pos);
    }
    return text;
  }

  void emit_text(std::string text, size_t offset) {
    if (!text.empty()) tokens_.push_back(Token{Token::Type::Text, std::move(text), 0, 0, pos_at(offset)});
  }

  size_t skip_space(size_t p) const {
    while (p < src_.size() && text::is_space(static_cast<unsigned char>(src_[p]))) ++p;
    return p;
  }

  // The end of a block tag at p: "+%}", "-%}" plus whitespace, or "%}" plus one newline
  // under trim_blocks. Returns the offset after it, or npos.
  size_t match_block_end(size_t p, std::string_view close) const {
    auto at = [&](size_t i, std::string_view s) { return src_.compare(i, s.size(), s) == 0; };
    if (at(p, "+") && at(p + 1, close)) return p + 1 + close.size();
    if (at(p, "-") && at(p + 1, close)) return skip_space(p + 1 + close.size());
    if (at(p, close)) {
      size_t end = p + close.size();
      if (options_.trim_blocks && end < src_.size() && src_[end] == '\n') ++end;
      return end;
    }
    return std::string::npos;
  }

  bool match_raw_begin(size_t p, size_t& body) const {
    p = skip_space(p);
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) return false;
    p = skip_space(p + 3);
    if (src_.compare(p, 3, "-%}") == 0) {
      body = skip_space(p + 3);
      return true;
    }
    if (src_.compare(p, 2, "%}") == 0) {
      body = p + 2;
      return true;
    }
    return false;
  }

  size_t lex_comment(size_t open, size_t p) {
    const size_t close = src_.find("#}", p);
    if (close == std::string::npos) fail(open, "missing end of comment tag");
    size_t end;
    if (close > p && (src_[close - 1] == '-' || src_[close - 1] == '+')) {
      end = match_block_end(close - 1, "#}");
    } else {
      end = match_block_end(close, "#}");
    }
    line_starting_ = end > 0 && src_[end - 1] == '\n';
    return end;
  }

  size_t lex_raw(size_t open, size_t body) {
    for (size_t p = src_.find("{%", body); p != std::string::npos; p = src_.find("{%", p + 1)) {
      size_t q = p + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = skip_space(q);
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q = skip_space(q + 6);
      const size_t end = match_block_end(q, "%}");
      if (end == std::string::npos) continue;
      emit_text(strip_before_tag(src_.substr(body, p - body), sign, true), body);
      line_starting_ = src_[end - 1] == '\n';
      return end;
    }
    fail(open, "missing end of raw directive");
  }

  size_t lex_tag(size_t open, size_t p, bool is_block) {
    tokens_.push_back(Token{is_block ? Token::Type::BlockBegin : Token::Type::VarBegin, "", 0, 0, pos_at(open)});
    std::vector<char> balance;
    while (true) {
      p = skip_space(p);
      if (p >= src_.size()) fail(open, is_block ? "unclosed block tag '{%'" : "unclosed expression tag '{{'");
      if (balance.empty()) {
        size_t end = std::string::npos;
        if (is_block) {
          end = match_block_end(p, "%}");
        } else if (src_.compare(p, 3, "-}}") == 0) {
          end = skip_space(p + 3);
        } else if (src_.compare(p, 2, "}}") == 0) {
          end = p + 2;
        }
        if (end != std::string::npos) {
          tokens_.push_back(Token{is_block ? Token::Type::BlockEnd : Token::Type::VarEnd, "", 0, 0, pos_at(p)});
          line_starting_ = src_[end - 1] == '\n';
          return end;
        }
      }
      p = lex_one(p, balance);
    }
  }

  size_t lex_one(size_t p, std::vector<char>& balance) {
    const char c = src_[p];
    if (is_digit(c)) return lex_number(p);
    if (is_name_start(c)) {
      size_t e = p;
      while (e < src_.size() && is_name_char(src_[e])) ++e;
      tokens_.push_back(Token{Token::Type::Name, src_.substr(p, e - p), 0, 0, pos_at(p)});
      return e;
    }
    if (c == '\'' || c == '"') return lex_string(p);
    for (std::string_view op : kOperators) {
      if (src_.compare(p, op.size(), op) != 0) continue;
      if (op == "(" || op == "[" || op == "{") {
        balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
      } else if (op == ")" || op == "]" || op == "}") {
        if (balance.empty()) fail(p, "unexpected '" + std::string(op) + "'");
        if (balance.back() != op[0]) {
          fail(p, "unexpected '" + std::string(op) + "', expected '" + std::string(1, balance.back()) + "'");
        }
        balance.pop_back();
      }
      tokens_.push_back(Token{Token::Type::Operator, std::string(op), 0, 0, pos_at(p)});
      return p + op.size();
    }
    fail(p, "unexpected character '" + std::string(1, c) + "'");
  }

  size_t digits(size_t p) const {
    while (p < src_.size() && (is_digit(src_[p]) || (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1])))) {
      ++p;
    }
    return p;
  }

  size_t lex_number(size_t p) {
    const SourcePos where = pos_at(p);
    size_t e = digits(p);
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' && is_digit(src_[e + 1]) && (p == 0 || src_[p - 1] != '.')) {
      e = digits(e + 1);
      is_float = true;
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t x = e + 1;
      if (x < src_.size() && (src_[x] == '+' || src_[x] == '-')) ++x;
      if (x < src_.size() && is_digit(src_[x])) {
        e = digits(x);
        is_float = true;
      }
    }
    std::string literal;
    for (size_t i = p; i < e; ++i) {
      if (src_[i] != '_') literal += src_[i];
    }
    Token token{is_float ? Token::Type::Float : Token::Type::Int, literal, 0, 0, where};
    try {
      if (is_float) {
        token.float_value = std::stod(literal);
      } else {
        token.int_value = std::stoll(literal);
      }
    } catch (const std::exception&) {
      fail(p, "number out of range: " + literal);
    }
    tokens_.push_back(std::move(token));
    return e;
  }

  // Python's string escapes, as Jinja unescapes string literals.
  size_t lex_string(size_t p) {
    const char quote = src_[p];
    std::string value;
    size_t i = p + 1;
    while (true) {
      if (i >= src_.size()) fail(p, "unterminated string literal");
      const char c = src_[i];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++i;
        continue;
      }
      if (i + 1 >= src_.size()) fail(p, "unterminated string literal");
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case '\n': break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (i + n > src_.size()) fail(i - 2, "truncated \\" + std::string(1, e) + " escape");
          char32_t code = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = src_[i + k];
            const int d = is_digit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
            if (d < 0) fail(i - 2, "truncated \\" + std::string(1, e) + " escape");
            code = code * 16 + static_cast<char32_t>(d);
          }
          if (code > 0x10FFFF) fail(i - 2, "illegal Unicode character");
          tokenizer::utf8::append_codepoint(value, code);
          i += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            char32_t code = static_cast<char32_t>(e - '0');
            for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k) {
              code = code * 8 + static_cast<char32_t>(src_[i++] - '0');
            }
            tokenizer::utf8::append_codepoint(value, code);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    tokens_.push_back(Token{Token::Type::String, std::move(value), 0, 0, pos_at(p)});
    return i + 1;
  }

  std::string src_;
  LexerOptions options_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace sluice::chat
