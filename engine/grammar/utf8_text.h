#pragma once
// UTF-8 decoding (strict) for the grammar front ends, which read patterns and
// grammars as code points and write literals as bytes. Strict: overlong forms,
// surrogates and values past U+10FFFF are invalid (they cannot appear in a byte string
// the matcher would have to match as UTF-8).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/tokenizer/utf8.h"

namespace sluice::grammar::utf8 {

inline bool is_scalar(uint32_t cp) { return cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF); }

// The code point at text[pos], advancing pos past it; nullopt (pos unchanged) when
// the bytes there are not one valid UTF-8 sequence.
inline std::optional<uint32_t> decode(std::string_view text, size_t& pos) {
  if (pos >= text.size()) return std::nullopt;
  const auto lead = static_cast<uint8_t>(text[pos]);
  if (lead < 0x80) return text[pos++];
  int length = 0;
  uint32_t cp = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    cp = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    cp = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    cp = lead & 0x07;
  } else {
    return std::nullopt;
  }
  if (pos + length > text.size()) return std::nullopt;
  for (int i = 1; i < length; ++i) {
    const auto next = static_cast<uint8_t>(text[pos + i]);
    if ((next & 0xC0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (next & 0x3F);
  }
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kSmallest[length] || !is_scalar(cp)) return std::nullopt;
  pos += length;
  return cp;
}

// The UTF-8 bytes of `cp`, which must be a scalar value (is_scalar).
inline std::string encode(uint32_t cp) {
  std::string out;
  tokenizer::utf8::append_codepoint(out, cp);
  return out;
}

}  // namespace sluice::grammar::utf8
