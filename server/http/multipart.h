#pragma once
// multipart/form-data bodies (RFC 7578 over RFC 2046's framing), as curl -F,
// requests, httpx and browsers send them: the boundary from the Content-Type,
// parts separated by CRLF "--" boundary, each with its own headers
// (Content-Disposition: form-data; name="..."; filename="...", and an optional
// Content-Type) and its bytes as they are. Strict where clients agree (CRLF line
// ends, a closing delimiter, a name on every part) and bounded (parts, header
// bytes), so hostile bodies cost a linear scan and a 400. Pure functions over the
// body, which the parts view: any thread.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace sluice::server {

struct MultipartPart {
  std::string name;                     // the form field
  std::optional<std::string> filename;  // set for a file field
  std::string content_type;             // the part's Content-Type; empty when it sent none
  std::string_view data;                // a view into the body
};

struct MultipartLimits {
  size_t max_parts = 16;
  size_t max_header_bytes = 8192;  // one part's header block
};

// The boundary of a multipart/form-data Content-Type; nullopt when the type is
// another or the boundary is missing or invalid (1..70 characters).
std::optional<std::string> multipart_boundary(std::string_view content_type);

// The parts of `body` in order, or why it is malformed (a message for a 400).
std::variant<std::vector<MultipartPart>, std::string> parse_multipart(std::string_view body, std::string_view boundary,
                                                                      const MultipartLimits& limits = {});

}  // namespace sluice::server
