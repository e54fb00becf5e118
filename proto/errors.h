#pragma once
// OpenAI-style error objects: {"error":{"message","type","param","code"}} with the
// HTTP status that goes with them. User mistakes become an ApiError value and then
// a 4xx response; nothing here throws.
#include <string>

namespace sluice::proto {

struct ApiError {
  int status = 500;
  std::string message;
  std::string type;   // "invalid_request_error", "server_error", ...
  std::string param;  // the offending request field; empty: null
  std::string code;   // machine-readable reason; empty: null
};

// The JSON body of an error response.
std::string error_body(const ApiError& error);

ApiError invalid_request(std::string message, std::string param = {});
ApiError unauthorized();
ApiError not_found_route(const std::string& method, const std::string& target);
ApiError method_not_allowed(const std::string& method, const std::string& path);
ApiError model_not_found(const std::string& model);
ApiError payload_too_large(unsigned long long limit_bytes);
ApiError header_too_large();
ApiError too_many_connections();
ApiError not_ready(std::string message);
// The request's own deadline (the `timeout` field or the server default) passed
// before it generated anything: 400, a status clients do not retry. A deadline
// after some output is no error: the choices finish with "timeout".
ApiError request_timeout();
// The queue timeout passed before the scheduler admitted the request: others held
// the queue, so it is the server's state, not the request: 503, worth a retry.
ApiError queue_timeout();
// A failure on our side: says only the request id, never the exception text.
ApiError internal_error(const std::string& request_id);

}  // namespace sluice::proto
