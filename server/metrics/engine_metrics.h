#pragma once
// vLLM's engine metric set, one label set per loaded model (label model_name), on the
// daemon's prometheus registry: under sluice's names (sluice_num_requests_running,
// ...) and, when asked, also under vLLM's own (vllm:num_requests_running, ...) for the
// gateways, autoscalers and dashboards that read those. One source of truth: every
// callback and refresh feeds each naming's series (engine_metric_series.h) alike.
//
// A model name may have only one EngineMetrics per registry at a time; the registry
// must outlive it. Models can be loaded and unloaded in any order.
//
// Threads: the EngineObserver callbacks run on the model's engine thread and only
// touch pre-resolved series (atomic counters, histograms with a short internal lock);
// refresh() runs on HTTP threads, any number at once.
#include <prometheus/registry.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/engine_stats.h"
#include "server/metrics/engine_metric_series.h"
#include "server/metrics/speculative_metrics.h"

namespace sluice::server {

class EngineMetrics : public engine::EngineObserver {
 public:
  // with_vllm_names: also expose every series under vLLM's name (config option
  // metrics_vllm_names). Throws std::invalid_argument when `model_name` already has
  // an EngineMetrics on this registry.
  EngineMetrics(prometheus::Registry& registry, std::string model_name, bool with_vllm_names = false);
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
  std::string model_name_;
  std::vector<std::unique_ptr<EngineSeries>> namings_;  // [0]: sluice's; [1]: vLLM's, when asked
  // Made after the series, whose constructor refuses a model name already registered.
  std::unique_ptr<SpeculativeMetrics> speculative_;

  // The highest engine totals seen by refresh (guarded by refresh_mutex_).
  std::mutex refresh_mutex_;
  engine::EngineStats last_;
};

}  // namespace sluice::server
