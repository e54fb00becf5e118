#pragma once
// The per-request policies that wrap every route: request ids, API keys, CORS.
// Each is built once from the config and then only read, so any I/O thread may
// use it.
#include <string>
#include <vector>

#include "server/http/http.h"

namespace sluice::server {

// The client's X-Request-Id when it is usable (1-128 printable ASCII characters),
// otherwise a fresh random id.
std::string request_id_for(const Request& request);
std::string make_request_id();

// API keys sent as `Authorization: Bearer <key>` or `x-api-key: <key>` (Anthropic's
// clients); any configured key is accepted.
class ApiKeyAuth {
 public:
  explicit ApiKeyAuth(std::vector<std::string> keys);
  bool is_enabled() const { return !keys_.empty(); }
  bool allows(const Request& request) const;

 private:
  std::vector<std::string> keys_;
};

// Cross-origin resource sharing for browser clients. Origins are exact
// (scheme://host[:port]) or "*".
class Cors {
 public:
  explicit Cors(std::vector<std::string> origins);
  bool is_enabled() const { return !origins_.empty(); }
  // An OPTIONS request carrying Origin and Access-Control-Request-Method.
  bool is_preflight(const Request& request) const;
  // 204 with the allow-headers for a permitted origin, 403 otherwise.
  void answer_preflight(const Request& request, Response& response) const;
  // Adds Access-Control-Allow-Origin (and friends) when the request's origin is allowed.
  void decorate(const Request& request, Response& response) const;

 private:
  bool allows_origin(std::string_view origin) const;
  std::vector<std::string> origins_;
  bool allow_any_ = false;
};

}  // namespace sluice::server
