#pragma once
// vLLM's engine metric set (vllm:* renamed sluice_*), one label set per loaded model,
// on the daemon's prometheus registry.
//
// EngineMetrics owns the series of one model (label model_name). The families are
// shared by every model on the same registry: they are registered once, by the
// first EngineMetrics of that registry, and removed with the last one, so models can
// be loaded and unloaded in any order. The registry must outlive its EngineMetrics,
// and a model name may have only one EngineMetrics per registry at a time.
//
// Threads: the EngineObserver callbacks run on the model's engine thread and only
// touch pre-resolved series (atomic counters, histograms with a short internal lock);
// refresh() runs on HTTP threads, any number at once.
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <string>

#include "engine/engine_stats.h"

namespace sluice::server {

class EngineMetricFamilies;  // engine_metrics.cpp: the per-registry families

class EngineMetrics : public engine::EngineObserver {
 public:
  // Throws std::invalid_argument when `model_name` already has an EngineMetrics
  // on this registry.
  EngineMetrics(prometheus::Registry& registry, std::string model_name);
  ~EngineMetrics() override;
  EngineMetrics(const EngineMetrics&) = delete;
  EngineMetrics& operator=(const EngineMetrics&) = delete;

  // Gauges take the snapshot's values; counters grow by the change of the engine's
  // cumulative totals since the previous refresh. Called by /metrics before rendering.
  void refresh(const engine::EngineStats& stats);

  void on_step(const engine::StepMetrics& step) override;
  void on_first_token(double ttft_s) override;
  void on_inter_token_latency(double seconds) override;
  void on_request_finished(const engine::RequestMetrics& request) override;

  const std::string& model_name() const { return model_name_; }

 private:
  // Indexed like EngineStats::num_finished (engine::FinishReason); [0] (none) unused.
  static constexpr size_t kNumFinishSlots =
      std::tuple_size<decltype(engine::EngineStats::num_finished)>::value;

  std::string model_name_;
  EngineMetricFamilies& families_;  // reference-counted per registry

  prometheus::Gauge& num_requests_running_;
  prometheus::Gauge& num_requests_waiting_;
  prometheus::Gauge& kv_cache_usage_perc_;
  prometheus::Counter& prefix_cache_queries_;
  prometheus::Counter& prefix_cache_hits_;
  prometheus::Counter& num_preemptions_;
  prometheus::Counter& prompt_tokens_;
  prometheus::Counter& generation_tokens_;
  prometheus::Counter& masked_tokens_;
  std::array<prometheus::Counter*, kNumFinishSlots> request_success_{};

  prometheus::Histogram& time_to_first_token_;
  prometheus::Histogram& inter_token_latency_;
  prometheus::Histogram& e2e_request_latency_;
  prometheus::Histogram& request_queue_time_;
  prometheus::Histogram& request_prompt_tokens_;
  prometheus::Histogram& request_generation_tokens_;
  prometheus::Histogram& iteration_tokens_;

  // The highest engine totals seen by refresh (guarded by refresh_mutex_).
  std::mutex refresh_mutex_;
  engine::EngineStats last_;
};

}  // namespace sluice::server
