// What a speech client is told when its audio does not come whole.
#include "server/api/speech/speech_errors.h"

#include <doctest/doctest.h>

namespace unit_server_api_test_speech_errors {

using namespace sluice;
using namespace sluice::server;

namespace {

engine::ChoiceFinish finish_with(engine::FinishReason reason, std::string error = {}) {
  engine::ChoiceFinish finish;
  finish.reason = reason;
  finish.error = std::move(error);
  return finish;
}

proto::SpeechRequest whole_pcm(int32_t frames) {
  proto::SpeechRequest request;
  request.response_format = proto::AudioFormat::pcm;
  request.max_new_tokens = frames;
  return request;
}

}  // namespace

TEST_CASE("speech abort: only a shutdown says shutting down") {
  using engine::FinishReason;
  const proto::ApiError shutdown = speech_failure(finish_with(FinishReason::abort), 3, {std::nullopt, true}, "r1");
  CHECK(shutdown.status == 503);
  CHECK(shutdown.message == "Shutting down");

  // An abort while the engine runs on: the client fell behind, no shutdown.
  const proto::ApiError fell_behind = speech_failure(finish_with(FinishReason::abort), 3, {}, "r2");
  CHECK(fell_behind.message.find("Shutting down") == std::string::npos);
  CHECK(fell_behind.code == "aborted");

  // A dead engine says so and why, whatever the finish reason.
  for (FinishReason reason : {FinishReason::abort, FinishReason::error}) {
    const proto::ApiError dead =
        speech_failure(finish_with(reason, "x"), 0, {std::string("the codec thread stopped: boom"), true}, "r3");
    CHECK(dead.status == 503);
    CHECK(dead.code == "engine_unhealthy");
    CHECK(dead.message.find("the codec thread stopped: boom") != std::string::npos);
  }

  // A failed step on a live engine: a 500 naming only the request id.
  const proto::ApiError failed = speech_failure(finish_with(FinishReason::error, "kernel"), 0, {}, "r4");
  CHECK(failed.status == 500);
  CHECK(failed.message.find("r4") != std::string::npos);
  CHECK(failed.message.find("kernel") == std::string::npos);
}

TEST_CASE("a whole lossless speech response that could pass max_speech_body_bytes is refused up front") {
  const uint64_t limit = 32u << 20;
  // 8192 frames of 24 kHz 16-bit PCM: 31.5 MB, within 32 MiB.
  CHECK_FALSE(whole_speech_too_long(whole_pcm(8192), 24000, 1920, limit));
  // At 48 kHz and a quarter speed the same frames make 8x that.
  proto::SpeechRequest slow = whole_pcm(8192);
  slow.sample_rate = 48000;
  slow.speed = 0.25f;
  auto error = whole_speech_too_long(slow, 24000, 1920, limit);
  REQUIRE(error);
  CHECK(error->status == 400);
  CHECK(error->param == "max_new_tokens");
  CHECK(error->message.find("stream_format") != std::string::npos);
  CHECK(error->message.find("at most 1092 frames") != std::string::npos);
  // Streamed, or with no explicit frame count, or lossy: not refused up front.
  slow.stream_format = proto::SpeechStreamFormat::audio;
  CHECK_FALSE(whole_speech_too_long(slow, 24000, 1920, limit));
  proto::SpeechRequest unbounded = whole_pcm(1);
  unbounded.max_new_tokens.reset();
  CHECK_FALSE(whole_speech_too_long(unbounded, 24000, 1920, 1024));
  proto::SpeechRequest mp3 = whole_pcm(8192);
  mp3.response_format = proto::AudioFormat::mp3;
  CHECK_FALSE(whole_speech_too_long(mp3, 24000, 1920, 1024));

  const proto::ApiError overflow = whole_speech_overflow(limit);
  CHECK(overflow.status == 400);
  CHECK(overflow.param == "stream_format");
}
}  // namespace unit_server_api_test_speech_errors
