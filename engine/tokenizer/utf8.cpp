#include "engine/tokenizer/utf8.h"

namespace sluice::tokenizer::utf8 {

size_t sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

namespace {

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// Checks the second byte against the narrowed ranges of RFC 3629 (no overlongs, no
// surrogates, nothing above U+10FFFF).
bool second_byte_ok(uint8_t lead, uint8_t second) {
  if (!is_continuation(second)) return false;
  if (lead == 0xE0) return second >= 0xA0;
  if (lead == 0xED) return second <= 0x9F;
  if (lead == 0xF0) return second >= 0x90;
  if (lead == 0xF4) return second <= 0x8F;
  return true;
}

bool lead_ok(uint8_t lead) { return lead < 0x80 || (lead >= 0xC2 && lead <= 0xF4); }

}  // namespace

size_t valid_sequence_at(std::string_view text, size_t pos) {
  const auto lead = static_cast<uint8_t>(text[pos]);
  if (!lead_ok(lead)) return 0;
  const size_t len = sequence_length(lead);
  if (pos + len > text.size()) return 0;
  if (len == 1) return 1;
  if (!second_byte_ok(lead, static_cast<uint8_t>(text[pos + 1]))) return 0;
  for (size_t i = 2; i < len; ++i) {
    if (!is_continuation(static_cast<uint8_t>(text[pos + i]))) return 0;
  }
  return len;
}

size_t incomplete_tail(std::string_view text) {
  // A sequence is at most 4 bytes, so only the last 3 bytes can be an unfinished one.
  const size_t n = text.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const size_t start = n - back;
    const auto lead = static_cast<uint8_t>(text[start]);
    if (is_continuation(lead)) continue;
    if (!lead_ok(lead) || lead < 0x80) return 0;
    const size_t len = sequence_length(lead);
    if (len <= back) return 0;  // complete (or invalid): nothing to wait for
    if (back >= 2 && !second_byte_ok(lead, static_cast<uint8_t>(text[start + 1]))) return 0;
    return back;
  }
  return 0;
}

bool is_valid(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = valid_sequence_at(text, pos);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

std::string sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = valid_sequence_at(text, pos);
    if (len == 0) {
      out += "\xEF\xBF\xBD";
      ++pos;
    } else {
      out.append(text.substr(pos, len));
      pos += len;
    }
  }
  return out;
}


uint32_t next_codepoint(std::string_view text, size_t& pos) {
  const size_t len = valid_sequence_at(text, pos);
  const auto lead = static_cast<uint8_t>(text[pos]);
  if (len <= 1) {
    ++pos;
    return lead;
  }
  uint32_t cp = lead & (0xFF >> (len + 1));
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3F);
  pos += len;
  return cp;
}

namespace {

// The mapping's code point for each byte: printable ranges keep their value, the
// rest get 256, 257, ... in byte order.
std::array<uint32_t, 256> make_byte_codepoints() {
  std::array<uint32_t, 256> cps{};
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    cps[b] = printable ? b : next++;
  }
  return cps;
}

const std::array<uint32_t, 256>& byte_codepoints() {
  static const std::array<uint32_t, 256> cps = make_byte_codepoints();
  return cps;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    for (size_t b = 0; b < 256; ++b) append_codepoint(t[b], byte_codepoints()[b]);
    return t;
  }();
  return table;
}

int unicode_to_byte(uint32_t codepoint) {
  static const std::array<int16_t, 512> inverse = [] {
    std::array<int16_t, 512> inv;
    inv.fill(-1);
    for (size_t b = 0; b < 256; ++b) inv[byte_codepoints()[b]] = static_cast<int16_t>(b);
    return inv;
  }();
  return codepoint < inverse.size() ? inverse[codepoint] : -1;
}

}  // namespace sluice::tokenizer::utf8
