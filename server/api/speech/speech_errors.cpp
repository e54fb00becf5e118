#include "server/api/speech/speech_errors.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "server/api/submit_error.h"

namespace sluice::server {
namespace {

constexpr uint64_t kBytesPerSample = 2;   // 16-bit
constexpr uint64_t kContainerBytes = 4096;  // WAV/FLAC headers and frame overhead, generously

const char* const kStreamHint = "stream it instead (stream_format \"audio\" or \"sse\")";

}  // namespace

proto::ApiError speech_failure(const engine::ChoiceFinish& finish, int64_t frames, const SpeechEngineState& engine,
                               const std::string& request_id) {
  // A dead engine ends what it holds with "error" (with "abort" if it died while
  // stopping): the client learns what /health says, not an opaque 500.
  if (engine.death) {
    spdlog::error("request {}: speech failed: {}", request_id, *engine.death);
    return engine_dead_error(*engine.death);
  }
  switch (finish.reason) {
    case engine::FinishReason::timeout:
      return {400,
              frames == 0 ? "The request's deadline passed before any audio was made (it was still queued); "
                            "retry later"
                          : "The request's deadline passed before the speech was complete",
              "timeout_error", "", "timeout"};
    case engine::FinishReason::abort:
      if (engine.stopping) return proto::not_ready("Shutting down");
      // Not a shutdown, and a client that left is never answered: its stream filled
      // because it did not read the audio as fast as it was made.
      return {500,
              "The request was aborted: " +
                  (finish.error.empty() ? std::string("the client fell behind reading its audio") : finish.error),
              "server_error", "", "aborted"};
    default:
      spdlog::error("request {}: speech failed: {}", request_id, finish.error);
      return proto::internal_error(request_id);
  }
}

std::optional<proto::ApiError> whole_speech_too_long(const proto::SpeechRequest& request, int32_t input_rate,
                                                     int64_t samples_per_frame, uint64_t max_bytes) {
  using proto::AudioFormat;
  const AudioFormat format = request.response_format;
  if (!request.max_new_tokens || request.stream_format != proto::SpeechStreamFormat::none) return std::nullopt;
  if (format != AudioFormat::wav && format != AudioFormat::pcm && format != AudioFormat::flac) return std::nullopt;
  if (input_rate <= 0 || samples_per_frame <= 0 || request.speed <= 0) return std::nullopt;
  const double rate = request.sample_rate.value_or(input_rate);
  const double bytes_per_frame =
      static_cast<double>(samples_per_frame) * rate / input_rate / request.speed * kBytesPerSample;
  const double most = bytes_per_frame * *request.max_new_tokens + kContainerBytes;
  if (most <= static_cast<double>(max_bytes)) return std::nullopt;
  const auto fitting = static_cast<int64_t>(
      std::floor(std::max(0.0, static_cast<double>(max_bytes) - kContainerBytes) / bytes_per_frame));
  return proto::invalid_request(
      fmt::format("max_new_tokens {} can make up to {:.0f} bytes of {} audio ({:.0f} Hz, speed {}), more than a "
                  "whole response may hold (max_speech_body_bytes is {}): ask for at most {} frames, or {}",
                  *request.max_new_tokens, most, proto::audio_format_name(format), rate, request.speed, max_bytes,
                  fitting, kStreamHint),
      "max_new_tokens");
}

proto::ApiError whole_speech_overflow(uint64_t max_bytes) {
  return proto::invalid_request(
      fmt::format("The audio grew past the {} bytes a whole response may hold (max_speech_body_bytes): {}, or ask "
                  "for less (max_new_tokens, a faster speed, a lower sample_rate)",
                  max_bytes, kStreamHint),
      "stream_format");
}

}  // namespace sluice::server
