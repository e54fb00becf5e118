#include "server/metrics/engine_metric_series.h"

#include <prometheus/family.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <utility>

namespace sluice::server {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Bucket lists follow vLLM's (vllm/v1/metrics/loggers.py), so dashboards and
// alerts written for vLLM read the same here.

// A cache hit on a short prompt is a millisecond; a long queue, minutes.
const Histogram::BucketBoundaries kTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};

const Histogram::BucketBoundaries kInterTokenBuckets = {
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};

// Whole requests, and time spent queued: up to about two hours.
const Histogram::BucketBoundaries kRequestLatencyBuckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,  2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

// 1, 2, 5, 10, 20, 50, ... up to 1e5 tokens (vLLM stops at max_model_len, which
// the metrics do not know; empty top buckets cost a few bytes per scrape).
Histogram::BucketBoundaries one_two_five_buckets(double max_value) {
  Histogram::BucketBoundaries buckets;
  for (double base = 1; base <= max_value; base *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (base * m <= max_value) buckets.push_back(base * m);
    }
  }
  return buckets;
}
const Histogram::BucketBoundaries kTokenCountBuckets = one_two_five_buckets(100000);

// Tokens per engine step (vLLM: the CUDA-graph capture sizes plus the step budget).
const Histogram::BucketBoundaries kIterationTokenBuckets = {
    1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};

// Names are the naming's prefix + a stem. Prometheus' text format carries a counter's
// _total in the family name, as vLLM's exposition (prometheus_client) shows it.
class Namer {
 public:
  Namer(prometheus::Registry& registry, MetricNaming naming)
      : registry_(registry), prefix_(naming == MetricNaming::vllm ? "vllm:" : "sluice_") {}

  Family<Gauge>& gauge(const char* stem, const char* help) const {
    return prometheus::BuildGauge().Name(prefix_ + stem).Help(help).Register(registry_);
  }
  Family<Counter>& counter(const char* stem, const char* help) const {
    return prometheus::BuildCounter().Name(prefix_ + stem).Help(help).Register(registry_);
  }
  Family<Histogram>& histogram(const char* stem, const char* help) const {
    return prometheus::BuildHistogram().Name(prefix_ + stem).Help(help).Register(registry_);
  }

 private:
  prometheus::Registry& registry_;
  std::string prefix_;
};

}  // namespace

// The families of one naming on one registry, shared by the EngineSeries of every
// model on it; created by the first, removed from the registry by the last. Guarded
// by a global mutex: construction and destruction only, never on a hot path.
class EngineMetricFamilies {
 public:
  static EngineMetricFamilies& acquire(prometheus::Registry& registry, MetricNaming naming,
                                       const std::string& model_name) {
    std::lock_guard lock(mutex());
    const Key key{&registry, naming};
    auto it = all().find(key);
    if (it == all().end()) {
      std::unique_ptr<EngineMetricFamilies> families(new EngineMetricFamilies(registry, naming));
      it = all().emplace(key, std::move(families)).first;
    }
    if (!it->second->model_names_.insert(model_name).second) {
      throw std::invalid_argument("engine metrics for model '" + model_name + "' are already registered");
    }
    return *it->second;
  }

  void release(const std::string& model_name) {
    std::lock_guard lock(mutex());
    model_names_.erase(model_name);
    if (model_names_.empty()) all().erase(Key{&registry_, naming_});  // destroys *this
  }

  ~EngineMetricFamilies() {
    for (auto* f : {&num_requests_running, &num_requests_waiting, &kv_cache_usage_perc, &cache_config_info}) {
      registry_.Remove(*f);
    }
    for (auto* f : {&prefix_cache_queries, &prefix_cache_hits, &num_preemptions, &prompt_tokens, &generation_tokens,
                    &request_success}) {
      registry_.Remove(*f);
    }
    for (auto* f : {&time_to_first_token, &inter_token_latency, &e2e_request_latency, &request_queue_time,
                    &request_prompt_tokens, &request_generation_tokens}) {
      registry_.Remove(*f);
    }
    if (masked_tokens) registry_.Remove(*masked_tokens);
    if (iteration_tokens) registry_.Remove(*iteration_tokens);
    if (time_per_output_token) registry_.Remove(*time_per_output_token);
  }

  Family<Gauge>& num_requests_running;
  Family<Gauge>& num_requests_waiting;
  Family<Gauge>& kv_cache_usage_perc;
  Family<Gauge>& cache_config_info;
  Family<Counter>& prefix_cache_queries;
  Family<Counter>& prefix_cache_hits;
  Family<Counter>& num_preemptions;
  Family<Counter>& prompt_tokens;
  Family<Counter>& generation_tokens;
  Family<Counter>& request_success;
  Family<Histogram>& time_to_first_token;
  Family<Histogram>& inter_token_latency;
  Family<Histogram>& e2e_request_latency;
  Family<Histogram>& request_queue_time;
  Family<Histogram>& request_prompt_tokens;
  Family<Histogram>& request_generation_tokens;
  Family<Counter>* masked_tokens = nullptr;
  Family<Histogram>* iteration_tokens = nullptr;
  Family<Histogram>* time_per_output_token = nullptr;

 private:
  using Key = std::pair<const prometheus::Registry*, MetricNaming>;

  EngineMetricFamilies(prometheus::Registry& r, MetricNaming naming) : EngineMetricFamilies(Namer(r, naming), r, naming) {}

  EngineMetricFamilies(const Namer& n, prometheus::Registry& r, MetricNaming naming)
      : num_requests_running(n.gauge("num_requests_running", "Requests in model execution batches")),
        num_requests_waiting(
            n.gauge("num_requests_waiting", "Requests waiting to be scheduled, preempted ones included")),
        kv_cache_usage_perc(n.gauge("kv_cache_usage_perc", "Fraction of KV-cache blocks in use (0 to 1)")),
        cache_config_info(n.gauge("cache_config_info", "The KV cache's configuration, in the labels; the value is 1")),
        prefix_cache_queries(n.counter("prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache")),
        prefix_cache_hits(n.counter("prefix_cache_hits_total", "Prompt tokens found in the prefix cache")),
        num_preemptions(
            n.counter("num_preemptions_total", "Sequences preempted (KV blocks freed, recomputed later)")),
        prompt_tokens(n.counter("prompt_tokens_total", "Prefill tokens processed")),
        generation_tokens(n.counter("generation_tokens_total", "Generation tokens processed")),
        request_success(n.counter("request_success_total",
                                  "Finished requests (choices) by finish reason; unlike vLLM, abort, timeout and "
                                  "error are counted too")),
        time_to_first_token(
            n.histogram("time_to_first_token_seconds", "Time from arrival to the first generated token")),
        inter_token_latency(
            n.histogram("inter_token_latency_seconds", "Time between consecutive tokens of one choice")),
        e2e_request_latency(
            n.histogram("e2e_request_latency_seconds", "Time from arrival to the last choice finished")),
        request_queue_time(n.histogram("request_queue_time_seconds", "Time from arrival to first scheduled")),
        request_prompt_tokens(n.histogram("request_prompt_tokens", "Prompt tokens per finished request")),
        request_generation_tokens(
            n.histogram("request_generation_tokens", "Generated tokens per finished request, all choices")),
        registry_(r),
        naming_(naming) {
    if (naming == MetricNaming::sluice) {
      masked_tokens = &n.counter("structured_output_masked_tokens_total",
                                 "Tokens sampled under a grammar's mask (structured outputs)");
      // vLLM names this histogram iteration_tokens_total; promtool (rightly) refuses
      // a _total suffix on anything but a counter, so it is sluice_iteration_tokens
      // and has no vllm: copy.
      iteration_tokens = &n.histogram("iteration_tokens", "Tokens scheduled per engine step");
    } else {
      time_per_output_token = &n.histogram("time_per_output_token_seconds",
                                           "Time between consecutive tokens of one choice (older name of "
                                           "vllm:inter_token_latency_seconds)");
    }
  }

  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::map<Key, std::unique_ptr<EngineMetricFamilies>>& all() {
    static std::map<Key, std::unique_ptr<EngineMetricFamilies>> m;
    return m;
  }

  prometheus::Registry& registry_;
  MetricNaming naming_;
  std::set<std::string> model_names_;
};

namespace {
prometheus::Labels model_label(const std::string& model_name) { return {{"model_name", model_name}}; }
}  // namespace

EngineSeries::EngineSeries(prometheus::Registry& registry, MetricNaming naming, std::string model_name)
    : model_name_(std::move(model_name)),
      families_(EngineMetricFamilies::acquire(registry, naming, model_name_)),
      num_requests_running(families_.num_requests_running.Add(model_label(model_name_))),
      num_requests_waiting(families_.num_requests_waiting.Add(model_label(model_name_))),
      kv_cache_usage_perc(families_.kv_cache_usage_perc.Add(model_label(model_name_))),
      prefix_cache_queries(families_.prefix_cache_queries.Add(model_label(model_name_))),
      prefix_cache_hits(families_.prefix_cache_hits.Add(model_label(model_name_))),
      num_preemptions(families_.num_preemptions.Add(model_label(model_name_))),
      prompt_tokens(families_.prompt_tokens.Add(model_label(model_name_))),
      generation_tokens(families_.generation_tokens.Add(model_label(model_name_))),
      time_to_first_token(families_.time_to_first_token.Add(model_label(model_name_), kTtftBuckets)),
      inter_token_latency(families_.inter_token_latency.Add(model_label(model_name_), kInterTokenBuckets)),
      e2e_request_latency(families_.e2e_request_latency.Add(model_label(model_name_), kRequestLatencyBuckets)),
      request_queue_time(families_.request_queue_time.Add(model_label(model_name_), kRequestLatencyBuckets)),
      request_prompt_tokens(families_.request_prompt_tokens.Add(model_label(model_name_), kTokenCountBuckets)),
      request_generation_tokens(
          families_.request_generation_tokens.Add(model_label(model_name_), kTokenCountBuckets)) {
  // Every reason from the start, so rate() sees the first one of each.
  for (size_t i = 1; i < kNumFinishSlots; ++i) {
    auto reason = engine::to_string(static_cast<engine::FinishReason>(i));
    request_success[i] =
        &families_.request_success.Add({{"model_name", model_name_}, {"finished_reason", std::string(reason)}});
  }
  if (families_.masked_tokens) masked_tokens = &families_.masked_tokens->Add(model_label(model_name_));
  if (families_.iteration_tokens)
    iteration_tokens = &families_.iteration_tokens->Add(model_label(model_name_), kIterationTokenBuckets);
  if (families_.time_per_output_token)
    time_per_output_token = &families_.time_per_output_token->Add(model_label(model_name_), kInterTokenBuckets);
}

EngineSeries::~EngineSeries() {
  families_.num_requests_running.Remove(&num_requests_running);
  families_.num_requests_waiting.Remove(&num_requests_waiting);
  families_.kv_cache_usage_perc.Remove(&kv_cache_usage_perc);
  if (cache_config_info_) families_.cache_config_info.Remove(cache_config_info_);
  families_.prefix_cache_queries.Remove(&prefix_cache_queries);
  families_.prefix_cache_hits.Remove(&prefix_cache_hits);
  families_.num_preemptions.Remove(&num_preemptions);
  families_.prompt_tokens.Remove(&prompt_tokens);
  families_.generation_tokens.Remove(&generation_tokens);
  for (size_t i = 1; i < kNumFinishSlots; ++i) families_.request_success.Remove(request_success[i]);
  families_.time_to_first_token.Remove(&time_to_first_token);
  families_.inter_token_latency.Remove(&inter_token_latency);
  families_.e2e_request_latency.Remove(&e2e_request_latency);
  families_.request_queue_time.Remove(&request_queue_time);
  families_.request_prompt_tokens.Remove(&request_prompt_tokens);
  families_.request_generation_tokens.Remove(&request_generation_tokens);
  if (masked_tokens) families_.masked_tokens->Remove(masked_tokens);
  if (iteration_tokens) families_.iteration_tokens->Remove(iteration_tokens);
  if (time_per_output_token) families_.time_per_output_token->Remove(time_per_output_token);
  families_.release(model_name_);
}

void EngineSeries::set_cache_config(int32_t block_size, int32_t num_blocks) {
  if (cache_config_info_ || block_size <= 0 || num_blocks <= 0) return;
  // vLLM's labels for the two figures gateways read; the CPU offload pool sluice
  // does not have is 0, as in a vLLM without one.
  cache_config_info_ = &families_.cache_config_info.Add({{"model_name", model_name_},
                                                          {"block_size", std::to_string(block_size)},
                                                          {"num_gpu_blocks", std::to_string(num_blocks)},
                                                          {"num_cpu_blocks", "0"}});
  cache_config_info_->Set(1);
}

}  // namespace sluice::server
