#pragma once
// An API error written once, in the words of the API the route belongs to: the
// OpenAI shape ({"error": {"message", "type", "param", "code"}}) or the Anthropic
// Messages shape ({"type": "error", "error": {"type", "message"}}). A route says its
// dialect when it is added (Router::add); the dispatcher copies it to the Exchange,
// so that shared code refusing a request never needs to know which API asked.
#include "proto/errors.h"
#include "server/http/router.h"

namespace sluice::server {

// The status, a JSON content type and the body in `dialect`'s shape.
void set_api_error(Response& response, const proto::ApiError& error, ErrorDialect dialect = ErrorDialect::openai);

// The same, in the dialect of the exchange's route.
inline void set_error(Exchange& ex, const proto::ApiError& error) { set_api_error(ex.response, error, ex.dialect); }

}  // namespace sluice::server
