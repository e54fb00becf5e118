// libFuzzer target for the multipart/form-data parser (POST /v1/audio/voices): the
// input's first line is the Content-Type, the rest the body. Any bytes must give
// parts that lie inside the body, each named, or an error message; never a crash,
// a hang or a read outside the body. Build and run: see tests/fuzz/CMakeLists.txt.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "server/http/multipart.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  const auto boundary = sluice::server::multipart_boundary(input.substr(0, newline));
  if (!boundary) return 0;
  const std::string_view body = input.substr(newline + 1);
  const sluice::server::MultipartLimits limits{.max_parts = 8, .max_header_bytes = 512};
  const auto parsed = sluice::server::parse_multipart(body, *boundary, limits);
  if (const auto* error = std::get_if<std::string>(&parsed)) {
    if (error->empty()) __builtin_trap();
    return 0;
  }
  const auto& parts = std::get<std::vector<sluice::server::MultipartPart>>(parsed);
  if (parts.size() > limits.max_parts) __builtin_trap();
  for (const auto& part : parts) {
    if (part.name.empty()) __builtin_trap();
    if (part.data.data() < body.data() || part.data.data() + part.data.size() > body.data() + body.size())
      __builtin_trap();
  }
  return 0;
}
