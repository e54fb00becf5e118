#include "proto/errors.h"

#include <nlohmann/json.hpp>

namespace sluice::proto {
namespace {

nlohmann::ordered_json null_if_empty(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
}

}  // namespace

std::string error_body(const ApiError& error) {
  nlohmann::ordered_json body = {{"error",
                          {{"message", error.message},
                           {"type", error.type},
                           {"param", null_if_empty(error.param)},
                           {"code", null_if_empty(error.code)}}}};
  // Replace invalid UTF-8 (echoed paths can hold any bytes) instead of throwing.
  return body.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

ApiError invalid_request(std::string message, std::string param) {
  return {400, std::move(message), "invalid_request_error", std::move(param), {}};
}

ApiError unauthorized() {
  return {401,
          "Invalid or missing API key. Send it as 'Authorization: Bearer <key>'.",
          "invalid_request_error",
          {},
          "invalid_api_key"};
}

ApiError not_found_route(const std::string& method, const std::string& target) {
  return {404, "No route for " + method + " " + target, "invalid_request_error", {}, "not_found"};
}

ApiError method_not_allowed(const std::string& method, const std::string& path) {
  return {405,
          "Method " + method + " is not allowed for " + path,
          "invalid_request_error",
          {},
          "method_not_allowed"};
}

ApiError model_not_found(const std::string& model) {
  return {404,
          "The model '" + model + "' does not exist",
          "invalid_request_error",
          "model",
          "model_not_found"};
}

ApiError payload_too_large(unsigned long long limit_bytes) {
  return {413,
          "Request body exceeds the limit of " + std::to_string(limit_bytes) + " bytes",
          "invalid_request_error",
          {},
          "payload_too_large"};
}

ApiError header_too_large() {
  return {431,
          "Request header fields too large",
          "invalid_request_error",
          {},
          "header_too_large"};
}

ApiError too_many_connections() {
  return {503,
          "Too many open connections; retry later",
          "server_error",
          {},
          "too_many_connections"};
}

ApiError not_ready(std::string message) {
  return {503, std::move(message), "server_error", {}, "not_ready"};
}

ApiError request_timeout() {
  // Not 408: the official OpenAI clients retry 408 (and 409, 429, 5xx), and a retry
  // of a request that waited out its deadline in the queue only adds to the load.
  return {400,
          "The request's deadline passed before it generated any token (it was still queued); "
          "retry later or allow a longer 'timeout'",
          "timeout_error", "timeout", "timeout"};
}

ApiError queue_timeout() {
  return {503,
          "The server is busy: the request was not admitted within the queue timeout (others held the queue); "
          "retry later",
          "server_error", {}, "queue_timeout"};
}

ApiError internal_error(const std::string& request_id) {
  return {500,
          "Internal server error (request id " + request_id + ")",
          "server_error",
          {},
          "internal_error"};
}

}  // namespace sluice::proto
