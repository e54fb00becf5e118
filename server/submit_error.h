#pragma once
// The HTTP answer to an engine's refusal of a request, shared by the text and speech
// routes: a full queue is 429 (clients back off and retry), shutting down 503, and a
// rejected request 400 naming the offending field.
#include "engine/engine.h"
#include "proto/errors.h"

namespace sluice::server {

inline proto::ApiError submit_error(const engine::SubmitResult& result) {
  switch (result.status) {
    case engine::SubmitStatus::queue_full:
      return {429, "The server is busy: " + result.message, "rate_limit_error", "", "queue_full"};
    case engine::SubmitStatus::shutting_down:
      return proto::not_ready("Shutting down");
    default: {
      proto::ApiError error = proto::invalid_request(result.message, result.param);
      error.code = result.code;
      return error;
    }
  }
}

}  // namespace sluice::server
