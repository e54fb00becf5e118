#pragma once
// The HTTP answer to an engine's refusal of a request, shared by the text and speech
// routes: a full queue is 429 (clients back off and retry), shutting down 503, a dead
// engine 503 saying so, and a rejected request 400 naming the offending field.
#include <boost/beast/http/field.hpp>

#include "engine/engine.h"
#include "proto/errors.h"
#include "server/http/api_error.h"
#include "server/http/http.h"

namespace sluice::server {

// The 503 of a model whose engine thread stopped: the process must be restarted
// (its /health is 503 too).
inline proto::ApiError engine_dead_error(const std::string& reason) {
  return {503, "The model's engine stopped (" + reason + "); the server needs a restart", "server_error", "",
          "engine_unhealthy"};
}

inline proto::ApiError submit_error(const engine::SubmitResult& result) {
  switch (result.status) {
    case engine::SubmitStatus::queue_full:
      return {429, "The server is busy: " + result.message, "rate_limit_error", "", "queue_full"};
    case engine::SubmitStatus::shutting_down:
      // A dead engine is no shutdown: say what happened (/health says it too).
      if (result.code == "engine_dead") return engine_dead_error(result.message);
      return proto::not_ready("Shutting down");
    default: {
      proto::ApiError error = proto::invalid_request(result.message, result.param);
      error.code = result.code;
      return error;
    }
  }
}

// Every choice timed out before its first token. The request's own deadline is
// final (400, not retried: the same request would time out again); one never
// admitted within the queue timeout met a queue held by others, so the client is
// told to come back (503 with Retry-After and x-should-retry, which the OpenAI
// clients follow).
inline void set_timeout_error(Exchange& ex, bool in_queue) {
  set_error(ex, in_queue ? proto::queue_timeout() : proto::request_timeout());
  ex.response.set("x-should-retry", in_queue ? "true" : "false");
  if (in_queue) ex.response.set(http::field::retry_after, "1");
}

}  // namespace sluice::server
