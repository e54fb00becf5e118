#include "server/http/api_error.h"

#include "proto/anthropic_messages.h"

namespace sluice::server {

void set_api_error(Response& response, const proto::ApiError& error, ErrorDialect dialect) {
  response.result(static_cast<unsigned>(error.status));
  response.set(http::field::content_type, "application/json");
  response.body() = dialect == ErrorDialect::anthropic ? proto::anthropic_error_body(error) : proto::error_body(error);
}

}  // namespace sluice::server
