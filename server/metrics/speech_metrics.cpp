#include "server/metrics/speech_metrics.h"

#include <string_view>

namespace sluice::server {
namespace {

using prometheus::Histogram;

// Time to first audio: a frame or two of a warm engine (tens of ms) up to a long queue.
const Histogram::BucketBoundaries kFirstAudioBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75,
                                                        1.0,  2.5,   5.0,  10.0,  20.0, 40.0, 80.0};
// Audio seconds per wall second: below 1 cannot keep up with playback.
const Histogram::BucketBoundaries kRealTimeFactorBuckets = {0.1, 0.2, 0.5, 1.0, 1.5, 2.0, 3.0,
                                                            5.0, 10.0, 20.0, 50.0, 100.0};
// Frames per step: one per running speech sequence.
const Histogram::BucketBoundaries kFramesPerStepBuckets = {1, 2, 4, 8, 16, 32, 64, 128};

prometheus::Family<Histogram>& histogram(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

}  // namespace

SpeechMetrics::SpeechMetrics(prometheus::Registry& registry, std::string model_name)
    : model_name_(std::move(model_name)),
      first_audio_family_(histogram(registry, "sluice_speech_time_to_first_audio_seconds",
                                    "Seconds from a speech request's arrival to its first audio.")),
      rtf_family_(histogram(registry, "sluice_speech_real_time_factor",
                            "Seconds of audio per wall-clock second of a finished speech request.")),
      audio_seconds_family_(prometheus::BuildCounter()
                                .Name("sluice_speech_audio_seconds_total")
                                .Help("Seconds of speech audio generated.")
                                .Register(registry)),
      frames_per_step_family_(histogram(registry, "sluice_speech_frames_per_step",
                                        "Codec frames (80 ms each) generated per speech engine step.")),
      requests_family_(prometheus::BuildCounter()
                           .Name("sluice_speech_requests_total")
                           .Help("Finished speech requests by finish reason.")
                           .Register(registry)),
      primes_family_(prometheus::BuildCounter()
                         .Name("sluice_speech_reference_primes_total")
                         .Help("ICL voice references primed into a codec stream: decoded, or reused from a kept one.")
                         .Register(registry)),
      time_to_first_audio_(first_audio_family_.Add({{"model_name", model_name_}}, kFirstAudioBuckets)),
      real_time_factor_(rtf_family_.Add({{"model_name", model_name_}}, kRealTimeFactorBuckets)),
      audio_seconds_(audio_seconds_family_.Add({{"model_name", model_name_}})),
      frames_per_step_(frames_per_step_family_.Add({{"model_name", model_name_}}, kFramesPerStepBuckets)),
      primes_decoded_(primes_family_.Add({{"model_name", model_name_}, {"reused", "false"}})),
      primes_reused_(primes_family_.Add({{"model_name", model_name_}, {"reused", "true"}})) {
  for (size_t i = 1; i < kNumReasons; ++i) {
    const std::string_view reason = engine::to_string(static_cast<engine::FinishReason>(i));
    requests_[i] = &requests_family_.Add({{"model_name", model_name_}, {"finished_reason", std::string(reason)}});
  }
}

SpeechMetrics::~SpeechMetrics() {
  first_audio_family_.Remove(&time_to_first_audio_);
  rtf_family_.Remove(&real_time_factor_);
  audio_seconds_family_.Remove(&audio_seconds_);
  frames_per_step_family_.Remove(&frames_per_step_);
  for (size_t i = 1; i < kNumReasons; ++i) requests_family_.Remove(requests_[i]);
  primes_family_.Remove(&primes_decoded_);
  primes_family_.Remove(&primes_reused_);
}

void SpeechMetrics::on_first_audio(double seconds_since_arrival) { time_to_first_audio_.Observe(seconds_since_arrival); }

void SpeechMetrics::on_speech_finished(engine::FinishReason reason, double audio_s, double wall_s) {
  const auto slot = static_cast<size_t>(reason);
  if (slot > 0 && slot < kNumReasons) requests_[slot]->Increment();
  if (audio_s > 0) audio_seconds_.Increment(audio_s);
  // A request that made no audio has no rate worth recording.
  if (audio_s > 0 && wall_s > 0) real_time_factor_.Observe(audio_s / wall_s);
}

void SpeechMetrics::on_speech_step(int64_t frames) {
  if (frames > 0) frames_per_step_.Observe(static_cast<double>(frames));
}

void SpeechMetrics::on_reference_primed(bool reused) { (reused ? primes_reused_ : primes_decoded_).Increment(); }

}  // namespace sluice::server
