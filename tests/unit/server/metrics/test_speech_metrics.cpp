// The speech series: names, labels, what each callback adds, two models on one
// registry, and the series gone with their SpeechMetrics.
#include "server/metrics/speech_metrics.h"

#include <doctest/doctest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

namespace sluice::server::unit_server_metrics_test_speech_metrics {
namespace {

std::string render(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

// The value of one series as the serializer spells it; NaN when absent.
double value(const std::string& text, const std::string& series) {
  const std::string needle = "\n" + series + " ";
  const auto at = ("\n" + text).find(needle);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + needle.size() - 1, nullptr);
}

TEST_CASE("speech metrics: each callback feeds its series under the model's label") {
  prometheus::Registry registry;
  SpeechMetrics metrics(registry, "tts");
  metrics.on_first_audio(0.09);
  metrics.on_speech_step(3);
  metrics.on_speech_step(0);  // a step that made no frame is not a sample
  metrics.on_speech_finished(engine::FinishReason::stop, 2.4, 0.8);
  metrics.on_speech_finished(engine::FinishReason::abort, 0.0, 0.1);
  metrics.on_reference_primed(false);
  metrics.on_reference_primed(true);
  metrics.on_reference_primed(true);
  const std::string text = render(registry);
  CHECK(value(text, R"(sluice_speech_reference_primes_total{model_name="tts",reused="false"})") == 1);
  CHECK(value(text, R"(sluice_speech_reference_primes_total{model_name="tts",reused="true"})") == 2);
  CHECK(value(text, R"(sluice_speech_time_to_first_audio_seconds_count{model_name="tts"})") == 1);
  CHECK(value(text, R"(sluice_speech_time_to_first_audio_seconds_bucket{model_name="tts",le="0.1"})") == 1);
  CHECK(value(text, R"(sluice_speech_time_to_first_audio_seconds_bucket{model_name="tts",le="0.075"})") == 0);
  CHECK(value(text, R"(sluice_speech_frames_per_step_count{model_name="tts"})") == 1);
  CHECK(value(text, R"(sluice_speech_frames_per_step_sum{model_name="tts"})") == 3);
  CHECK(value(text, R"(sluice_speech_audio_seconds_total{model_name="tts"})") == doctest::Approx(2.4));
  // 2.4 s of audio in 0.8 s: three times real time; the aborted request had no audio.
  CHECK(value(text, R"(sluice_speech_real_time_factor_count{model_name="tts"})") == 1);
  CHECK(value(text, R"(sluice_speech_real_time_factor_sum{model_name="tts"})") == doctest::Approx(3.0));
  CHECK(value(text, R"(sluice_speech_real_time_factor_bucket{model_name="tts",le="0.1"})") == 0);
  CHECK(value(text, R"(sluice_speech_real_time_factor_bucket{model_name="tts",le="100"})") == 1);
  CHECK(value(text, R"(sluice_speech_requests_total{finished_reason="stop",model_name="tts"})") == 1);
  CHECK(value(text, R"(sluice_speech_requests_total{finished_reason="abort",model_name="tts"})") == 1);
  CHECK(value(text, R"(sluice_speech_requests_total{finished_reason="timeout",model_name="tts"})") == 0);
  CHECK(std::isnan(value(text, R"(sluice_speech_requests_total{finished_reason="none",model_name="tts"})")));
}

TEST_CASE("speech metrics: two models share the families; a model's series leave with it") {
  prometheus::Registry registry;
  SpeechMetrics a(registry, "a");
  auto b = std::make_unique<SpeechMetrics>(registry, "b");
  b->on_speech_finished(engine::FinishReason::length, 1.0, 1.0);
  CHECK(value(render(registry), R"(sluice_speech_audio_seconds_total{model_name="b"})") == 1.0);
  b.reset();
  const std::string text = render(registry);
  CHECK(std::isnan(value(text, R"(sluice_speech_audio_seconds_total{model_name="b"})")));
  CHECK(value(text, R"(sluice_speech_audio_seconds_total{model_name="a"})") == 0);
}

}  // namespace
}  // namespace sluice::server
