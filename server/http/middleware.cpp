#include "server/http/middleware.h"

#include <algorithm>
#include <cctype>
#include <random>

#include "proto/errors.h"

namespace sluice::server {
namespace {

// Compares in time independent of where the strings differ, so response timing
// does not leak how much of a key was right (only whether the length was).
bool equal_constant_time(std::string_view presented, std::string_view key) {
  if (presented.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(presented[i] ^ key[i]);
  return diff == 0;
}

constexpr std::string_view kAllowedHeaders = "Authorization, Content-Type, X-Request-Id";
constexpr std::string_view kAllowedMethods = "GET, HEAD, POST, OPTIONS";

}  // namespace

std::string make_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "req-";
  for (int part = 0; part < 2; ++part) {
    uint64_t bits = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4) id.push_back(kHex[bits & 15]);
  }
  return id;
}

std::string request_id_for(const Request& request) {
  auto it = request.find("X-Request-Id");
  if (it != request.end()) {
    std::string_view id = it->value();
    bool usable = !id.empty() && id.size() <= 128 &&
                  std::all_of(id.begin(), id.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (usable) return std::string(id);
  }
  return make_request_id();
}

ApiKeyAuth::ApiKeyAuth(std::vector<std::string> keys) : keys_(std::move(keys)) {}

bool ApiKeyAuth::allows(const Request& request) const {
  if (keys_.empty()) return true;
  // Anthropic's clients send the key as `x-api-key`.
  if (auto key = request.find("x-api-key"); key != request.end()) {
    bool ok = false;
    for (const auto& configured : keys_) ok |= equal_constant_time(key->value(), configured);
    if (ok) return true;
  }
  auto it = request.find(http::field::authorization);
  if (it == request.end()) return false;
  std::string_view value = it->value();
  constexpr std::string_view kScheme = "Bearer ";
  if (value.size() <= kScheme.size()) return false;
  // The scheme name is case-insensitive (RFC 7235).
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) !=
        std::tolower(static_cast<unsigned char>(kScheme[i])))
      return false;
  }
  std::string_view presented = value.substr(kScheme.size());
  bool ok = false;
  for (const auto& key : keys_) ok |= equal_constant_time(presented, key);
  return ok;
}

Cors::Cors(std::vector<std::string> origins) : origins_(std::move(origins)) {
  allow_any_ = std::find(origins_.begin(), origins_.end(), "*") != origins_.end();
}

bool Cors::allows_origin(std::string_view origin) const {
  return allow_any_ || std::find(origins_.begin(), origins_.end(), origin) != origins_.end();
}

bool Cors::is_preflight(const Request& request) const {
  return request.method() == http::verb::options && request.count(http::field::origin) &&
         request.count(http::field::access_control_request_method);
}

void Cors::answer_preflight(const Request& request, Response& response) const {
  std::string_view origin = request[http::field::origin];
  if (!allows_origin(origin)) {
    response.result(http::status::forbidden);
    response.set(http::field::content_type, "application/json");
    response.body() = proto::error_body(
        {403, "Origin '" + std::string(origin) + "' is not allowed", "invalid_request_error", {},
         "cors_origin_not_allowed"});
    return;
  }
  response.result(http::status::no_content);
  decorate(request, response);
  response.set(http::field::access_control_allow_methods, kAllowedMethods);
  auto requested = request.find(http::field::access_control_request_headers);
  response.set(http::field::access_control_allow_headers,
               requested != request.end() ? std::string_view(requested->value()) : kAllowedHeaders);
  response.set(http::field::access_control_max_age, "600");
}

void Cors::decorate(const Request& request, Response& response) const {
  if (!is_enabled()) return;
  auto it = request.find(http::field::origin);
  if (it == request.end() || !allows_origin(it->value())) return;
  response.set(http::field::access_control_allow_origin, allow_any_ ? "*" : it->value());
  if (!allow_any_) response.set(http::field::vary, "Origin");
  response.set(http::field::access_control_expose_headers, "X-Request-Id");
}

}  // namespace sluice::server
