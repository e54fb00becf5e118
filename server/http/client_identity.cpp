#include "server/http/client_identity.h"

#include <cctype>
#include <functional>
#include <string_view>

namespace sluice::server {

uint64_t client_identity(const Request& request, const config::Config& config) {
  if (config.api_keys.empty()) return 0;
  auto of_key = [](std::string_view key) -> uint64_t {
    const uint64_t hash = std::hash<std::string_view>{}(key);
    return hash != 0 ? hash : 1;
  };
  // Anthropic's clients send the key as x-api-key, which ApiKeyAuth checks first.
  if (const auto key = request.find("x-api-key"); key != request.end()) return of_key(key->value());
  const auto it = request.find(http::field::authorization);
  if (it == request.end()) return 0;
  std::string_view value = it->value();
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size()) return 0;
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(value[i])) != kScheme[i]) return 0;
  return of_key(value.substr(kScheme.size()));
}

}  // namespace sluice::server
