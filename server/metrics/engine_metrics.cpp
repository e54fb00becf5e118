#include "server/metrics/engine_metrics.h"

#include <prometheus/family.h>

#include <map>
#include <memory>
#include <set>
#include <stdexcept>

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
// EngineMetrics does not know; empty top buckets cost a few bytes per scrape).
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

Family<Gauge>& gauge(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
Family<Counter>& counter(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
Family<Histogram>& histogram(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}


}  // namespace

// The families of one registry, shared by the EngineMetrics of every model on it;
// created by the first, removed from the registry by the last. Guarded by a global
// mutex: construction and destruction only, never on a hot path.
class EngineMetricFamilies {
 public:
  static EngineMetricFamilies& acquire(prometheus::Registry& registry,
                                       const std::string& model_name) {
    std::lock_guard lock(mutex());
    auto it = all().find(&registry);
    if (it == all().end()) {
      std::unique_ptr<EngineMetricFamilies> families(new EngineMetricFamilies(registry));
      it = all().emplace(&registry, std::move(families)).first;
    }
    if (!it->second->model_names_.insert(model_name).second) {
      throw std::invalid_argument("engine metrics for model '" + model_name +
                                  "' are already registered");
    }
    return *it->second;
  }

  void release(const std::string& model_name) {
    std::lock_guard lock(mutex());
    model_names_.erase(model_name);
    if (model_names_.empty()) all().erase(&registry_);  // destroys *this
  }

  ~EngineMetricFamilies() {
    for (auto* f : {&num_requests_running, &num_requests_waiting, &kv_cache_usage_perc}) {
      registry_.Remove(*f);
    }
    for (auto* f : {&prefix_cache_queries, &prefix_cache_hits, &num_preemptions,
                    &prompt_tokens, &generation_tokens, &request_success, &masked_tokens}) {
      registry_.Remove(*f);
    }
    for (auto* f : {&time_to_first_token, &inter_token_latency, &e2e_request_latency,
                    &request_queue_time, &request_prompt_tokens, &request_generation_tokens,
                    &iteration_tokens}) {
      registry_.Remove(*f);
    }
  }

  Family<Gauge>& num_requests_running;
  Family<Gauge>& num_requests_waiting;
  Family<Gauge>& kv_cache_usage_perc;
  Family<Counter>& prefix_cache_queries;
  Family<Counter>& prefix_cache_hits;
  Family<Counter>& num_preemptions;
  Family<Counter>& prompt_tokens;
  Family<Counter>& generation_tokens;
  Family<Counter>& masked_tokens;
  Family<Counter>& request_success;
  Family<Histogram>& time_to_first_token;
  Family<Histogram>& inter_token_latency;
  Family<Histogram>& e2e_request_latency;
  Family<Histogram>& request_queue_time;
  Family<Histogram>& request_prompt_tokens;
  Family<Histogram>& request_generation_tokens;
  Family<Histogram>& iteration_tokens;

 private:
  explicit EngineMetricFamilies(prometheus::Registry& r)
      : num_requests_running(gauge(r, "sluice_num_requests_running",
                                   "Requests in model execution batches")),
        num_requests_waiting(gauge(r, "sluice_num_requests_waiting",
                                   "Requests waiting to be scheduled, preempted ones included")),
        kv_cache_usage_perc(gauge(r, "sluice_kv_cache_usage_perc",
                                  "Fraction of KV-cache blocks in use (0 to 1)")),
        prefix_cache_queries(counter(r, "sluice_prefix_cache_queries_total",
                                     "Prompt tokens looked up in the prefix cache")),
        prefix_cache_hits(counter(r, "sluice_prefix_cache_hits_total",
                                  "Prompt tokens found in the prefix cache")),
        num_preemptions(counter(r, "sluice_num_preemptions_total",
                                "Sequences preempted (KV blocks freed, recomputed later)")),
        prompt_tokens(counter(r, "sluice_prompt_tokens_total", "Prefill tokens processed")),
        generation_tokens(counter(r, "sluice_generation_tokens_total",
                                  "Generation tokens processed")),
        masked_tokens(counter(r, "sluice_structured_output_masked_tokens_total",
                              "Tokens sampled under a grammar's mask (structured outputs)")),
        request_success(counter(r, "sluice_request_success_total",
                                "Finished requests (choices) by finish reason; unlike vLLM, "
                                "abort, timeout and error are counted too")),
        time_to_first_token(histogram(r, "sluice_time_to_first_token_seconds",
                                      "Time from arrival to the first generated token")),
        inter_token_latency(histogram(r, "sluice_inter_token_latency_seconds",
                                      "Time between consecutive tokens of one choice")),
        e2e_request_latency(histogram(r, "sluice_e2e_request_latency_seconds",
                                      "Time from arrival to the last choice finished")),
        request_queue_time(histogram(r, "sluice_request_queue_time_seconds",
                                     "Time from arrival to first scheduled")),
        request_prompt_tokens(histogram(r, "sluice_request_prompt_tokens",
                                        "Prompt tokens per finished request")),
        request_generation_tokens(histogram(r, "sluice_request_generation_tokens",
                                            "Generated tokens per finished request, all choices")),
        // vLLM names this histogram iteration_tokens_total; promtool (rightly) refuses
        // a _total suffix on anything but a counter, so it is sluice_iteration_tokens.
        iteration_tokens(histogram(r, "sluice_iteration_tokens",
                                   "Tokens scheduled per engine step")),
        registry_(r) {}

  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::map<const prometheus::Registry*, std::unique_ptr<EngineMetricFamilies>>& all() {
    static std::map<const prometheus::Registry*, std::unique_ptr<EngineMetricFamilies>> m;
    return m;
  }

  prometheus::Registry& registry_;
  std::set<std::string> model_names_;
};

namespace {
prometheus::Labels model_label(const std::string& model_name) {
  return {{"model_name", model_name}};
}
}  // namespace

EngineMetrics::EngineMetrics(prometheus::Registry& registry, std::string model_name)
    : model_name_(std::move(model_name)),
      families_(EngineMetricFamilies::acquire(registry, model_name_)),
      num_requests_running_(families_.num_requests_running.Add(model_label(model_name_))),
      num_requests_waiting_(families_.num_requests_waiting.Add(model_label(model_name_))),
      kv_cache_usage_perc_(families_.kv_cache_usage_perc.Add(model_label(model_name_))),
      prefix_cache_queries_(families_.prefix_cache_queries.Add(model_label(model_name_))),
      prefix_cache_hits_(families_.prefix_cache_hits.Add(model_label(model_name_))),
      num_preemptions_(families_.num_preemptions.Add(model_label(model_name_))),
      prompt_tokens_(families_.prompt_tokens.Add(model_label(model_name_))),
      generation_tokens_(families_.generation_tokens.Add(model_label(model_name_))),
      masked_tokens_(families_.masked_tokens.Add(model_label(model_name_))),
      time_to_first_token_(
          families_.time_to_first_token.Add(model_label(model_name_), kTtftBuckets)),
      inter_token_latency_(
          families_.inter_token_latency.Add(model_label(model_name_), kInterTokenBuckets)),
      e2e_request_latency_(
          families_.e2e_request_latency.Add(model_label(model_name_), kRequestLatencyBuckets)),
      request_queue_time_(
          families_.request_queue_time.Add(model_label(model_name_), kRequestLatencyBuckets)),
      request_prompt_tokens_(
          families_.request_prompt_tokens.Add(model_label(model_name_), kTokenCountBuckets)),
      request_generation_tokens_(
          families_.request_generation_tokens.Add(model_label(model_name_), kTokenCountBuckets)),
      iteration_tokens_(
          families_.iteration_tokens.Add(model_label(model_name_), kIterationTokenBuckets)) {
  // Every reason from the start, so rate() sees the first one of each.
  for (size_t i = 1; i < kNumFinishSlots; ++i) {
    auto reason = engine::to_string(static_cast<engine::FinishReason>(i));
    request_success_[i] = &families_.request_success.Add(
        {{"model_name", model_name_}, {"finished_reason", std::string(reason)}});
  }
}

EngineMetrics::~EngineMetrics() {
  families_.num_requests_running.Remove(&num_requests_running_);
  families_.num_requests_waiting.Remove(&num_requests_waiting_);
  families_.kv_cache_usage_perc.Remove(&kv_cache_usage_perc_);
  families_.prefix_cache_queries.Remove(&prefix_cache_queries_);
  families_.prefix_cache_hits.Remove(&prefix_cache_hits_);
  families_.num_preemptions.Remove(&num_preemptions_);
  families_.prompt_tokens.Remove(&prompt_tokens_);
  families_.generation_tokens.Remove(&generation_tokens_);
  families_.masked_tokens.Remove(&masked_tokens_);
  for (size_t i = 1; i < kNumFinishSlots; ++i) {
    families_.request_success.Remove(request_success_[i]);
  }
  families_.time_to_first_token.Remove(&time_to_first_token_);
  families_.inter_token_latency.Remove(&inter_token_latency_);
  families_.e2e_request_latency.Remove(&e2e_request_latency_);
  families_.request_queue_time.Remove(&request_queue_time_);
  families_.request_prompt_tokens.Remove(&request_prompt_tokens_);
  families_.request_generation_tokens.Remove(&request_generation_tokens_);
  families_.iteration_tokens.Remove(&iteration_tokens_);
  families_.release(model_name_);
}

void EngineMetrics::refresh(const engine::EngineStats& stats) {
  num_requests_running_.Set(stats.num_running);
  // Submitted but not yet seen by the engine thread is waiting too, as in vLLM.
  num_requests_waiting_.Set(stats.num_waiting + stats.num_pending);
  kv_cache_usage_perc_.Set(stats.kv_cache_usage);

  // Two scrapes at once must not both add the same delta.
  std::lock_guard lock(refresh_mutex_);
  // A total may step back (the scheduler reclassifies a `length` finish as `stop`
  // within a step); the counter then waits until the total passes its high mark, so
  // nothing is counted twice. An engine that restarts from zero needs a new
  // EngineMetrics.
  auto add = [](prometheus::Counter& c, uint64_t now, uint64_t& high_mark) {
    if (now > high_mark) {
      c.Increment(static_cast<double>(now - high_mark));
      high_mark = now;
    }
  };
  add(prefix_cache_queries_, stats.num_prefix_cache_queries, last_.num_prefix_cache_queries);
  add(prefix_cache_hits_, stats.num_prefix_cache_hits, last_.num_prefix_cache_hits);
  add(num_preemptions_, stats.num_preemptions, last_.num_preemptions);
  add(prompt_tokens_, stats.num_prompt_tokens, last_.num_prompt_tokens);
  add(generation_tokens_, stats.num_generation_tokens, last_.num_generation_tokens);
  for (size_t i = 1; i < kNumFinishSlots; ++i) {
    add(*request_success_[i], stats.num_finished[i], last_.num_finished[i]);
  }
}

void EngineMetrics::on_step(const engine::StepMetrics& step) {
  if (step.num_batched_tokens > 0) {
    iteration_tokens_.Observe(static_cast<double>(step.num_batched_tokens));
  }
  if (step.num_constrained > 0) masked_tokens_.Increment(static_cast<double>(step.num_constrained));
}

void EngineMetrics::on_first_token(double ttft_s) { time_to_first_token_.Observe(ttft_s); }

void EngineMetrics::on_inter_token_latency(double seconds) {
  inter_token_latency_.Observe(seconds);
}

void EngineMetrics::on_request_finished(const engine::RequestMetrics& request) {
  e2e_request_latency_.Observe(request.e2e_s);
  // 0 means never scheduled (aborted or timed out in the queue): no queue time to show.
  if (request.queue_time_s > 0) request_queue_time_.Observe(request.queue_time_s);
  request_prompt_tokens_.Observe(static_cast<double>(request.num_prompt_tokens));
  request_generation_tokens_.Observe(static_cast<double>(request.num_generation_tokens));
}

}  // namespace sluice::server
