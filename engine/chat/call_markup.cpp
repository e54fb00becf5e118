#include "engine/chat/call_markup.h"

#include <cctype>

#include "engine/tokenizer/utf8.h"

namespace sluice::chat::markup {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

// The start of the whitespace run that ends at `end`.
size_t space_run_start(std::string_view text, size_t end) {
  while (end > 0 && is_space(text[end - 1])) --end;
  return end;
}

std::string_view trim_trailing_space(std::string_view text) {
  return text.substr(0, space_run_start(text, text.size()));
}

// Where the part of `text` that must still be held begins: a suffix that may grow
// into `markup`, with the whitespace before it (markup may be preceded by dropped
// whitespace).
size_t held_tail_start(std::string_view text, std::string_view markup) {
  size_t start = text.size();
  const size_t longest = markup.size() - 1;
  for (size_t i = text.size() > longest ? text.size() - longest : 0; i < text.size(); ++i) {
    if (markup.substr(0, text.size() - i) == text.substr(i)) {
      start = i;
      break;
    }
  }
  return space_run_start(text, start);
}

// Bytes that may appear in a JSON number or literal (true, false, null).
bool is_scalar_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
         c == '+' || c == '.';
}

// The four hex digits at body[pos], or -1.
int32_t hex4(std::string_view body, size_t pos) {
  if (pos + 4 > body.size()) return -1;
  int32_t value = 0;
  for (size_t i = pos; i < pos + 4; ++i) {
    const char c = body[i];
    int32_t digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

// The text of a JSON string body (between its quotes). Lenient, because the model
// wrote it: an unknown escape keeps its character, a lone surrogate becomes U+FFFD,
// and an escape cut off by the end of the output is dropped.
std::string decode_json_string(std::string_view body) {
  std::string out;
  size_t i = 0;
  while (i < body.size()) {
    if (body[i] != '\\') {
      out += body[i++];
      continue;
    }
    if (i + 1 >= body.size()) break;
    const char escape = body[i + 1];
    i += 2;
    switch (escape) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        const int32_t unit = hex4(body, i);
        if (unit < 0) return out;  // cut off (or broken): nothing more is trustworthy
        i += 4;
        uint32_t cp = static_cast<uint32_t>(unit);
        if (cp >= 0xD800 && cp < 0xDC00) {  // a high surrogate: its pair follows
          const int32_t low = i + 1 < body.size() && body[i] == '\\' && body[i + 1] == 'u' ? hex4(body, i + 2) : -1;
          if (low >= 0xDC00 && low < 0xE000) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
            i += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          cp = 0xFFFD;
        }
        tokenizer::utf8::append_codepoint(out, cp);
        break;
      }
      default: out += escape; break;  // \" \\ \/ and anything unknown
    }
  }
  return out;
}

// The length of the unit of a JSON string body that starts at body[pos] (one byte, an
// escape, or a \u escape with the low surrogate that pairs with it), so that decoding
// the body unit by unit is decode_json_string of the whole: 0 when the body ends
// inside the unit (more text decides it), -1 for a broken \u escape (decode_json_string
// drops the rest of the body from there).
int32_t json_string_unit(std::string_view body, size_t pos) {
  if (body[pos] != '\\') return 1;
  if (pos + 1 >= body.size()) return 0;
  if (body[pos + 1] != 'u') return 2;
  const auto hex_prefix = [&](size_t from) {  // body[from..] could still start 4 hex digits
    for (size_t i = from; i < body.size() && i < from + 4; ++i)
      if (std::isxdigit(static_cast<unsigned char>(body[i])) == 0) return false;
    return true;
  };
  if (pos + 6 > body.size()) return hex_prefix(pos + 2) ? 0 : -1;
  const int32_t unit = hex4(body, pos + 2);
  if (unit < 0) return -1;
  if (unit < 0xD800 || unit >= 0xDC00) return 6;
  // A high surrogate: a \u escape of a low one after it makes a pair.
  const size_t next = pos + 6;
  if (next + 6 > body.size()) {
    const std::string_view rest = body.substr(next);
    const bool may_pair = (rest.empty() || rest[0] == '\\') && (rest.size() < 2 || rest[1] == 'u') && hex_prefix(next + 2);
    if (may_pair) return 0;
    return 6;
  }
  const int32_t low = body[next] == '\\' && body[next + 1] == 'u' ? hex4(body, next + 2) : -1;
  return low >= 0xDC00 && low < 0xE000 ? 12 : 6;
}


// `ws LEAD ws { ws "name" ws : ws STRING ws , ws ("arguments"|"parameters") ws :`
Opening read_opening(std::string_view text, std::string_view lead, bool lead_optional) {
  using Result = MarkupReader::Result;
  MarkupReader reader{text};
  Opening opening;
  const auto stop = [&](Result r) {
    opening.result = r;
    opening.end = reader.pos;
    return opening;
  };
  reader.space();
  if (!lead.empty() && (!lead_optional || (reader.pos < text.size() && text[reader.pos] == lead[0]))) {
    if (const Result r = reader.literal(lead); r != Result::matched) return stop(r);
    opening.lead_end = reader.pos;
  }
  const auto piece = [&](std::string_view expected) {
    reader.space();
    return reader.literal(expected);
  };
  for (const std::string_view expected : {"{", "\"name\"", ":"}) {
    if (const Result r = piece(expected); r != Result::matched) return stop(r);
  }
  reader.space();
  if (const Result r = reader.string(opening.name); r != Result::matched) return stop(r);
  for (const std::string_view expected : {",", "\""}) {
    if (const Result r = piece(expected); r != Result::matched) return stop(r);
  }
  if (reader.pos >= text.size()) return stop(Result::more);
  const std::string_view key = text[reader.pos] == 'p' ? "parameters\"" : "arguments\"";
  if (const Result r = reader.literal(key); r != Result::matched) return stop(r);
  if (const Result r = piece(":"); r != Result::matched) return stop(r);
  return stop(Result::matched);
}


// `ws { ws "response" ws : ws`, or `ws { ws "tool_calls" ws : ws [` and the first
// call's opening (read_opening without a lead).
Envelope read_envelope(std::string_view text) {
  using Result = MarkupReader::Result;
  MarkupReader reader{text};
  Envelope envelope;
  const auto stop = [&](Result r) {
    envelope.result = r;
    envelope.end = reader.pos;
    return envelope;
  };
  const auto piece = [&](std::string_view expected) {
    reader.space();
    return reader.literal(expected);
  };
  for (const std::string_view expected : {"{", "\""}) {
    if (const Result r = piece(expected); r != Result::matched) return stop(r);
  }
  if (reader.pos >= text.size()) return stop(Result::more);
  envelope.calls = text[reader.pos] == 't';
  if (const Result r = reader.literal(envelope.calls ? "tool_calls\"" : "response\""); r != Result::matched)
    return stop(r);
  if (const Result r = piece(":"); r != Result::matched) return stop(r);
  reader.space();
  if (!envelope.calls) return stop(Result::matched);
  if (const Result r = reader.literal("["); r != Result::matched) return stop(r);
  Opening first = read_opening(text.substr(reader.pos), "", false);
  envelope.result = first.result;
  envelope.end = reader.pos + first.end;
  envelope.name = std::move(first.name);
  return envelope;
}

}  // namespace sluice::chat::markup
