#pragma once
// The speech series of one speech model (label model_name), beside the shared
// sluice_* engine series its EngineMetrics keeps:
//   sluice_speech_time_to_first_audio_seconds   histogram: arrival -> first audio sent
//   sluice_speech_real_time_factor              histogram: audio seconds per wall second
//   sluice_speech_audio_seconds_total           counter
//   sluice_speech_frames_per_step               histogram: codec frames made per engine step
//   sluice_speech_requests_total{finished_reason} counter
//   sluice_speech_reference_primes_total{reused}  counter: ICL references decoded
//                                                 ("false") or reused primed ("true")
// The families live on the registry (merged when several speech models register
// them); each SpeechMetrics removes its own series when it goes.
//
// Threads: the SpeechObserver callbacks run on the speech engine's threads and only
// touch pre-resolved series (thread-safe in prometheus-cpp).
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <string>

#include "engine/tts/serving/speech_engine.h"

namespace sluice::server {

class SpeechMetrics : public engine::tts::SpeechObserver {
 public:
  SpeechMetrics(prometheus::Registry& registry, std::string model_name);
  ~SpeechMetrics() override;
  SpeechMetrics(const SpeechMetrics&) = delete;
  SpeechMetrics& operator=(const SpeechMetrics&) = delete;

  void on_first_audio(double seconds_since_arrival) override;
  void on_speech_finished(engine::FinishReason reason, double audio_s, double wall_s) override;
  void on_speech_step(int64_t frames) override;
  void on_reference_primed(bool reused) override;

 private:
  static constexpr size_t kNumReasons = 6;  // engine::FinishReason, none included (unused)

  std::string model_name_;
  prometheus::Family<prometheus::Histogram>& first_audio_family_;
  prometheus::Family<prometheus::Histogram>& rtf_family_;
  prometheus::Family<prometheus::Counter>& audio_seconds_family_;
  prometheus::Family<prometheus::Histogram>& frames_per_step_family_;
  prometheus::Family<prometheus::Counter>& requests_family_;
  prometheus::Family<prometheus::Counter>& primes_family_;

  prometheus::Histogram& time_to_first_audio_;
  prometheus::Histogram& real_time_factor_;
  prometheus::Counter& audio_seconds_;
  prometheus::Histogram& frames_per_step_;
  std::array<prometheus::Counter*, kNumReasons> requests_{};
  prometheus::Counter& primes_decoded_;
  prometheus::Counter& primes_reused_;
};

}  // namespace sluice::server
