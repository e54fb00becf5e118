#include "server/http/client_identity.h"

#include <cctype>
#include <functional>
#include <string_view>

namespace sluice::server {

uint64_t client_identity(const Request& request, const config::Config& config) {
  if (config.api_keys.empty()) return 0;
  const auto it = request.find(http::field::authorization);
  if (it == request.end()) return 0;
  std::string_view value = it->value();
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size()) return 0;
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(value[i])) != kScheme[i]) return 0;
  const uint64_t hash = std::hash<std::string_view>{}(value.substr(kScheme.size()));
  return hash != 0 ? hash : 1;
}

}  // namespace sluice::server
