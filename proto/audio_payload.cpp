#include "proto/audio_payload.h"

#include <array>
#include <cctype>
#include <cstdint>

namespace sluice::proto {
namespace {

constexpr std::array<int8_t, 256> make_table() {
  std::array<int8_t, 256> t{};
  for (int8_t& v : t) v = -1;
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr std::array<int8_t, 256> kTable = make_table();

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

// Whether the value names a resource instead of carrying one: a scheme such as
// http:// or file:, or a path.
bool looks_like_location(std::string_view v) {
  if (v.find("://") != std::string_view::npos) return true;
  if (starts_with_nocase(v, "file:")) return true;
  return v.starts_with('/') || v.starts_with("./") || v.starts_with("../") || v.starts_with('~');
}

}  // namespace

bool decode_base64(std::string_view text, std::string& out) {
  out.clear();
  out.reserve(text.size() / 4 * 3);
  uint32_t bits = 0;
  int num_bits = 0;
  size_t num_symbols = 0, num_padding = 0;
  for (const char c : text) {
    if (c == '\r' || c == '\n') continue;
    if (c == '=') {
      ++num_padding;
      continue;
    }
    const int8_t v = kTable[static_cast<unsigned char>(c)];
    if (v < 0 || num_padding > 0) return false;  // outside the alphabet, or data after padding
    bits = (bits << 6) | static_cast<uint32_t>(v);
    num_bits += 6;
    ++num_symbols;
    if (num_bits >= 8) {
      num_bits -= 8;
      out.push_back(static_cast<char>((bits >> num_bits) & 0xFF));
    }
  }
  // A lone symbol in the last group carries no whole byte; padding only fills a group.
  if (num_symbols % 4 == 1 || num_padding > 2) return false;
  if (num_padding > 0 && (num_symbols + num_padding) % 4 != 0) return false;
  return true;
}

std::variant<AudioPayload, ApiError> decode_audio_payload(std::string_view value, const std::string& param) {
  if (value.empty()) return invalid_request("'" + param + "' must not be empty.", param);
  AudioPayload out;
  std::string_view payload = value;
  if (starts_with_nocase(value, "data:")) {
    const size_t comma = value.find(',');
    const std::string_view header = value.substr(5, comma == std::string_view::npos ? 0 : comma - 5);
    const size_t semicolon = header.find(';');
    const std::string_view mime = header.substr(0, semicolon);
    const std::string_view encoding = semicolon == std::string_view::npos ? "" : header.substr(semicolon + 1);
    if (comma == std::string_view::npos || encoding != "base64" ||
        !(starts_with_nocase(mime, "audio/") || mime == "application/octet-stream"))
      return invalid_request("'" + param + "' must be a data URI of the form data:audio/<type>;base64,<data>.",
                             param);
    out.mime_type = std::string(mime);
    payload = value.substr(comma + 1);
  } else if (looks_like_location(value)) {
    return invalid_request("'" + param + "' must carry the audio itself (base64, or a data:audio/...;base64, URI): "
                           "URLs and file paths are not fetched.",
                           param);
  }
  if (!decode_base64(payload, out.bytes) || out.bytes.empty())
    return invalid_request("'" + param + "' is not valid base64 audio.", param);
  return out;
}

}  // namespace sluice::proto
