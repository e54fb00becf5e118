#pragma once
// The HTTP answer to an engine's refusal of a request, shared by the text and speech
// routes: a full queue is 429 (clients back off and retry), shutting down 503, a dead
// engine 503 saying so, and a rejected request 400 naming the offending field.
#include "engine/engine.h"
#include "proto/errors.h"

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

}  // namespace sluice::server
