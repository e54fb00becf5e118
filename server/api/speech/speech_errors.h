#pragma once
// What /v1/audio/speech tells a client when its speech does not come whole, kept
// apart from the route so each case is testable on its own:
//   - why a request that did not complete failed: its deadline, a shutdown, the
//     engine that died (503 with why, as /health says), a failed step, or an
//     abort that is none of those (the client fell behind reading its stream);
//   - whole (non-streamed) responses are held in memory until the end, so they are
//     bounded by max_speech_body_bytes: a request whose max_new_tokens could make
//     more lossless audio than that is refused up front, and audio that grows past
//     it anyway is cut off with a 400 telling the client to stream.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/request.h"
#include "proto/errors.h"
#include "proto/speech.h"

namespace sluice::server {

// The engine's state when a request ended.
struct SpeechEngineState {
  std::optional<std::string> death;  // why the engine died; nullopt while it lives
  bool stopping = false;             // stop() was called: the daemon is shutting down
};

// The error for a request whose finish is neither "stop" nor "length", after
// `frames` frames of audio. An "error" finish is logged with the request id.
proto::ApiError speech_failure(const engine::ChoiceFinish& finish, int64_t frames, const SpeechEngineState& engine,
                               const std::string& request_id);

// The 400 (param "max_new_tokens") for a whole response in a lossless format (wav,
// pcm, flac: their size follows from the samples) whose max_new_tokens frames could
// make more than `max_bytes` bytes of 16-bit audio at the request's sample rate and
// speed. `input_rate` and `samples_per_frame` are the model's.
std::optional<proto::ApiError> whole_speech_too_long(const proto::SpeechRequest& request, int32_t input_rate,
                                                     int64_t samples_per_frame, uint64_t max_bytes);

// The 400 (param "stream_format") for a whole response whose audio grew past `max_bytes`.
proto::ApiError whole_speech_overflow(uint64_t max_bytes);

}  // namespace sluice::server
