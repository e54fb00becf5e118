#include "server/http/multipart.h"

#include <algorithm>
#include <cctype>

namespace sluice::server {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A header value's parameters after its first item: `; key=value` or
// `; key="quoted \" value"`. Keys lower-cased. false for a malformed list.
bool read_parameters(std::string_view text, std::vector<std::pair<std::string, std::string>>& out) {
  size_t i = 0;
  while (i < text.size() && text[i] != ';') ++i;  // skip the first item (form-data, multipart/...)
  while (i < text.size()) {
    ++i;  // the ';'
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    if (i == text.size()) return true;  // a trailing ';'
    const size_t key_start = i;
    while (i < text.size() && text[i] != '=' && text[i] != ';') ++i;
    if (i == text.size() || text[i] != '=') return false;
    const std::string key = lower(trim(text.substr(key_start, i - key_start)));
    if (key.empty()) return false;
    ++i;  // the '='
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    std::string value;
    if (i < text.size() && text[i] == '"') {
      ++i;
      bool closed = false;
      while (i < text.size()) {
        const char c = text[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < text.size()) {
          value.push_back(text[i++]);
          continue;
        }
        value.push_back(c);
      }
      if (!closed) return false;
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
      if (i < text.size() && text[i] != ';') return false;
    } else {
      const size_t value_start = i;
      while (i < text.size() && text[i] != ';') ++i;
      value = std::string(trim(text.substr(value_start, i - value_start)));
    }
    out.emplace_back(key, std::move(value));
  }
  return true;
}

bool is_boundary_char(char c) {
  // RFC 2046 bchars.
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("'()+_,-./:=? ").find(c) != std::string_view::npos;
}

// One part's header block (without its blank line) into `part`.
std::optional<std::string> read_headers(std::string_view block, MultipartPart& part) {
  bool has_disposition = false;
  while (!block.empty()) {
    const size_t end = block.find("\r\n");
    const std::string_view line = block.substr(0, end);
    block = end == std::string_view::npos ? std::string_view() : block.substr(end + 2);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return "a part has a malformed header line";
    const std::string name = lower(trim(line.substr(0, colon)));
    const std::string_view value = trim(line.substr(colon + 1));
    if (name == "content-disposition") {
      if (has_disposition) return "a part has two Content-Disposition headers";
      has_disposition = true;
      if (lower(trim(value.substr(0, value.find(';')))) != "form-data")
        return "a part's Content-Disposition is not form-data";
      std::vector<std::pair<std::string, std::string>> params;
      if (!read_parameters(value, params)) return "a part's Content-Disposition is malformed";
      bool has_name = false;
      for (auto& [key, v] : params) {
        if (key == "name") {
          part.name = std::move(v);
          has_name = true;
        } else if (key == "filename") {
          part.filename = std::move(v);
        }
      }
      if (!has_name || part.name.empty()) return "a part's Content-Disposition has no name";
    } else if (name == "content-type") {
      part.content_type = std::string(value);
    }
  }
  if (!has_disposition) return "a part has no Content-Disposition header";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> multipart_boundary(std::string_view content_type) {
  if (lower(trim(content_type.substr(0, content_type.find(';')))) != "multipart/form-data") return std::nullopt;
  std::vector<std::pair<std::string, std::string>> params;
  if (!read_parameters(content_type, params)) return std::nullopt;
  for (const auto& [key, value] : params) {
    if (key != "boundary") continue;
    if (value.empty() || value.size() > 70 || value.back() == ' ') return std::nullopt;
    if (!std::all_of(value.begin(), value.end(), is_boundary_char)) return std::nullopt;
    return value;
  }
  return std::nullopt;
}

std::variant<std::vector<MultipartPart>, std::string> parse_multipart(std::string_view body, std::string_view boundary,
                                                                      const MultipartLimits& limits) {
  if (boundary.empty()) return std::string("the multipart boundary is empty");
  const std::string delimiter = "\r\n--" + std::string(boundary);
  // The first delimiter may open the body (no CRLF before it) or follow a preamble.
  size_t pos = 0;
  const std::string_view first(delimiter.data() + 2, delimiter.size() - 2);
  if (body.starts_with(first)) {
    pos = first.size();
  } else {
    const size_t found = body.find(delimiter);
    if (found == std::string_view::npos) return std::string("the body holds no multipart boundary");
    pos = found + delimiter.size();
  }
  std::vector<MultipartPart> parts;
  for (;;) {
    // After a delimiter: "--" closes the body; otherwise optional padding and CRLF.
    if (body.substr(pos, 2) == "--") return parts;
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") return std::string("a multipart boundary is not followed by a line break");
    pos += 2;
    if (parts.size() == limits.max_parts)
      return "the body has more than " + std::to_string(limits.max_parts) + " parts";
    // The header block ends at the first blank line ("\r\n\r\n"), or at once when
    // the part has no headers ("\r\n" right away).
    size_t headers_end = 0, data_start = 0;
    if (body.substr(pos, 2) == "\r\n") {
      headers_end = pos;
      data_start = pos + 2;
    } else {
      const size_t blank = body.substr(pos, limits.max_header_bytes + 4).find("\r\n\r\n");
      if (blank == std::string_view::npos)
        return std::string("a part's headers do not end (or exceed " + std::to_string(limits.max_header_bytes) +
                           " bytes)");
      headers_end = pos + blank;
      data_start = headers_end + 4;
    }
    MultipartPart part;
    if (auto error = read_headers(body.substr(pos, headers_end - pos), part)) return *error;
    const size_t next = body.find(delimiter, data_start);
    if (next == std::string_view::npos) return std::string("the multipart body ends before its closing boundary");
    part.data = body.substr(data_start, next - data_start);
    parts.push_back(std::move(part));
    pos = next + delimiter.size();
  }
}

}  // namespace sluice::server
