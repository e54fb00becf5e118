#include "server/metrics/engine_metrics.h"

#include <utility>

namespace sluice::server {

EngineMetrics::EngineMetrics(prometheus::Registry& registry, std::string model_name, bool with_vllm_names)
    : model_name_(std::move(model_name)) {
  namings_.push_back(std::make_unique<EngineSeries>(registry, MetricNaming::sluice, model_name_));
  if (with_vllm_names) namings_.push_back(std::make_unique<EngineSeries>(registry, MetricNaming::vllm, model_name_));
  speculative_ = std::make_unique<SpeculativeMetrics>(registry, model_name_, with_vllm_names);
}

EngineMetrics::~EngineMetrics() = default;

void EngineMetrics::refresh(const engine::EngineStats& stats) {
  speculative_->refresh(stats.speculation);
  for (auto& series : namings_) {
    series->num_requests_running.Set(stats.num_running);
    // Submitted but not yet seen by the engine thread is waiting too, as in vLLM.
    series->num_requests_waiting.Set(stats.num_waiting + stats.num_pending);
    series->kv_cache_usage_perc.Set(stats.kv_cache_usage);
  }

  // Two scrapes at once must not both add the same delta.
  std::lock_guard lock(refresh_mutex_);
  for (auto& series : namings_) series->set_cache_config(stats.block_size, stats.num_kv_blocks);
  // A total may step back (the scheduler reclassifies a `length` finish as `stop`
  // within a step); the counter then waits until the total passes its high mark, so
  // nothing is counted twice. An engine that restarts from zero needs a new
  // EngineMetrics.
  // `counter` picks the series of one naming.
  auto add = [this](auto counter, uint64_t now, uint64_t& high_mark) {
    if (now <= high_mark) return;
    for (auto& series : namings_) counter(*series).Increment(static_cast<double>(now - high_mark));
    high_mark = now;
  };
  using S = EngineSeries;
  add([](S& s) -> prometheus::Counter& { return s.prefix_cache_queries; }, stats.num_prefix_cache_queries,
      last_.num_prefix_cache_queries);
  add([](S& s) -> prometheus::Counter& { return s.prefix_cache_hits; }, stats.num_prefix_cache_hits,
      last_.num_prefix_cache_hits);
  add([](S& s) -> prometheus::Counter& { return s.num_preemptions; }, stats.num_preemptions, last_.num_preemptions);
  add([](S& s) -> prometheus::Counter& { return s.prompt_tokens; }, stats.num_prompt_tokens, last_.num_prompt_tokens);
  add([](S& s) -> prometheus::Counter& { return s.generation_tokens; }, stats.num_generation_tokens,
      last_.num_generation_tokens);
  for (size_t i = 1; i < kNumFinishSlots; ++i) {
    if (stats.num_finished[i] <= last_.num_finished[i]) continue;
    const auto delta = static_cast<double>(stats.num_finished[i] - last_.num_finished[i]);
    for (auto& series : namings_) series->request_success[i]->Increment(delta);
    last_.num_finished[i] = stats.num_finished[i];
  }
}

void EngineMetrics::on_step(const engine::StepMetrics& step) {
  for (auto& series : namings_) {
    if (series->iteration_tokens && step.num_batched_tokens > 0)
      series->iteration_tokens->Observe(static_cast<double>(step.num_batched_tokens));
    if (series->masked_tokens && step.num_constrained > 0)
      series->masked_tokens->Increment(static_cast<double>(step.num_constrained));
  }
}

void EngineMetrics::on_first_token(double ttft_s) {
  for (auto& series : namings_) series->time_to_first_token.Observe(ttft_s);
}

void EngineMetrics::on_inter_token_latency(double seconds) {
  for (auto& series : namings_) {
    series->inter_token_latency.Observe(seconds);
    if (series->time_per_output_token) series->time_per_output_token->Observe(seconds);
  }
}

void EngineMetrics::on_request_finished(const engine::RequestMetrics& request) {
  for (auto& series : namings_) {
    series->e2e_request_latency.Observe(request.e2e_s);
    // 0 means never scheduled (aborted or timed out in the queue): no queue time to show.
    if (request.queue_time_s > 0) series->request_queue_time.Observe(request.queue_time_s);
    series->request_prompt_tokens.Observe(static_cast<double>(request.num_prompt_tokens));
    series->request_generation_tokens.Observe(static_cast<double>(request.num_generation_tokens));
  }
}

}  // namespace sluice::server
