#pragma once
// UTF-8 helpers and the GPT-2 byte <-> unicode alphabet, shared by the tokenizer parts.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::tokenizer::utf8 {

// Length of the sequence a lead byte announces: 1..4, or 1 for a byte that cannot
// start a sequence (so callers always make progress).
size_t sequence_length(uint8_t lead);

// Bytes of the valid UTF-8 sequence at text[pos], or 0 when the bytes there are not
// one (a stray continuation byte, an overlong form, a surrogate, a truncated tail).
size_t valid_sequence_at(std::string_view text, size_t pos);

// True when the last bytes of `text` are the start of a valid sequence that more
// bytes could complete; returns how many such bytes there are (0..3).
size_t incomplete_tail(std::string_view text);

bool is_valid(std::string_view text);

// Copies `text`, replacing every byte that is not part of a valid sequence with
// U+FFFD, the way decoders show invalid input.
std::string sanitize(std::string_view text);

// Appends the UTF-8 encoding of `cp` (at most U+10FFFF). The one encoder of the
// project: the tokenizer, the grammar front ends and the Jinja lexer use it (inline,
// so that a fuzz target of any of them needs no other library).
inline void append_codepoint(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// GPT-2's reversible byte -> printable-character mapping used by byte-level BPE
// vocabularies: printable Latin-1 bytes map to themselves, the other 68 to U+0100...
// The character for each byte, UTF-8 encoded.
const std::array<std::string, 256>& byte_to_unicode();
// The byte a mapped character stands for, or -1. `codepoint` is the character.
int unicode_to_byte(uint32_t codepoint);

// Decodes one code point at text[pos] (which must be a valid sequence start) and
// advances pos; invalid bytes decode as themselves one at a time.
uint32_t next_codepoint(std::string_view text, size_t& pos);

}  // namespace sluice::tokenizer::utf8
