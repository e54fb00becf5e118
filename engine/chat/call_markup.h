#pragma once
// Reading a model's call markup and JSON text from the start of a text, for the output
// parser (output_parser.cpp): whitespace, JSON strings decoded leniently (the model
// wrote them), the openings of a call ("<tool_call>{"name": ..., "arguments":) and of
// the generic format's envelope. Each reader says whether the text matched, ends
// inside the piece (more text decides it) or does not fit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::chat::markup {

bool is_space(char c);
size_t skip_space(std::string_view text, size_t pos);
size_t space_run_start(std::string_view text, size_t end);
std::string_view trim_trailing_space(std::string_view text);
size_t held_tail_start(std::string_view text, std::string_view markup);
bool is_scalar_char(char c);
int32_t hex4(std::string_view body, size_t pos);
std::string decode_json_string(std::string_view body);
int32_t json_string_unit(std::string_view body, size_t pos);

// Reads call markup from the start of a text, one piece at a time. Each piece either
// matches (pos moves past it), needs more text (the text ends inside it), or fails
// (pos is left at the first byte that does not fit).
struct MarkupReader {
  enum class Result { matched, more, failed };
  std::string_view text;
  size_t pos = 0;

  void space() { pos = skip_space(text, pos); }
  Result literal(std::string_view expected) {
    for (size_t i = 0; i < expected.size(); ++i) {
      if (pos + i >= text.size()) return Result::more;
      if (text[pos + i] != expected[i]) {
        pos += i;
        return Result::failed;
      }
    }
    pos += expected.size();
    return Result::matched;
  }
  // A JSON string; its decoded text goes to `value`. A raw control character is
  // invalid JSON, which also bounds how long a runaway "name" is held.
  Result string(std::string& value) {
    if (const Result r = literal("\""); r != Result::matched) return r;
    for (size_t i = pos; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        value = decode_json_string(text.substr(pos, i - pos));
        pos = i + 1;
        return Result::matched;
      } else if (static_cast<unsigned char>(c) < 0x20) {
        pos = i;
        return Result::failed;
      }
    }
    return Result::more;
  }
};

struct Opening {
  MarkupReader::Result result = MarkupReader::Result::more;
  size_t end = 0;       // matched: where the arguments value starts; failed: the first bad byte
  size_t lead_end = 0;  // where the lead ended (0: it did not match)
  std::string name;
};

struct Envelope {
  MarkupReader::Result result = MarkupReader::Result::more;
  size_t end = 0;      // matched: where the response value or the first call's arguments start
  bool calls = false;  // "tool_calls" (else "response")
  std::string name;    // the first call's
};

Opening read_opening(std::string_view text, std::string_view lead, bool lead_optional);
Envelope read_envelope(std::string_view text);

}  // namespace sluice::chat::markup
