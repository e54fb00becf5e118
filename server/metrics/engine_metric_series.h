#pragma once
// The series of one model's engine metrics under one naming: sluice's own
// (sluice_num_requests_running, ...) or vLLM's (vllm:num_requests_running, ...), the
// names that gateways, autoscalers and dashboards written for vLLM read. EngineMetrics
// (engine_metrics.h) owns one EngineSeries per naming it exposes and feeds them all
// from the same callbacks and refreshes, so the two names never disagree.
//
// The families behind the series are shared by every model on a registry: registered
// by the first EngineSeries of a (registry, naming) and removed with the last one, so
// models can be loaded and unloaded in any order. The registry must outlive its
// series, and a model name may have only one EngineSeries per registry and naming.
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <cstdint>
#include <string>

#include "engine/engine_stats.h"

namespace sluice::server {

enum class MetricNaming {
  sluice,  // sluice_*, with sluice's extras (structured outputs, iteration tokens)
  vllm,    // vllm:*, as vLLM names them (its older time_per_output_token too)
};

class EngineMetricFamilies;  // engine_metric_series.cpp: the per-registry families

// Indexed like EngineStats::num_finished (engine::FinishReason); [0] (none) unused.
inline constexpr size_t kNumFinishSlots = std::tuple_size<decltype(engine::EngineStats::num_finished)>::value;

class EngineSeries {
 public:
  // Throws std::invalid_argument when `model_name` already has series of this naming
  // on this registry.
  EngineSeries(prometheus::Registry& registry, MetricNaming naming, std::string model_name);
  ~EngineSeries();
  EngineSeries(const EngineSeries&) = delete;
  EngineSeries& operator=(const EngineSeries&) = delete;

  // vLLM's cache_config_info: a gauge of 1 whose labels describe the KV cache. Its
  // values are known once the engine has sized its pool; the first call adds the
  // series, later calls do nothing.
  void set_cache_config(int32_t block_size, int32_t num_blocks);

 private:
  std::string model_name_;
  EngineMetricFamilies& families_;  // reference-counted per registry and naming

 public:
  prometheus::Gauge& num_requests_running;
  prometheus::Gauge& num_requests_waiting;
  prometheus::Gauge& kv_cache_usage_perc;
  prometheus::Counter& prefix_cache_queries;
  prometheus::Counter& prefix_cache_hits;
  prometheus::Counter& num_preemptions;
  prometheus::Counter& prompt_tokens;
  prometheus::Counter& generation_tokens;
  std::array<prometheus::Counter*, kNumFinishSlots> request_success{};

  prometheus::Histogram& time_to_first_token;
  prometheus::Histogram& inter_token_latency;
  prometheus::Histogram& e2e_request_latency;
  prometheus::Histogram& request_queue_time;
  prometheus::Histogram& request_prompt_tokens;
  prometheus::Histogram& request_generation_tokens;

  // Null where the naming has no such series.
  prometheus::Counter* masked_tokens = nullptr;             // sluice only
  prometheus::Histogram* iteration_tokens = nullptr;        // sluice only
  prometheus::Histogram* time_per_output_token = nullptr;   // vllm only: inter-token latency's older name

 private:
  prometheus::Gauge* cache_config_info_ = nullptr;  // set once, by set_cache_config
};

}  // namespace sluice::server
