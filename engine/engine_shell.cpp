#include "engine/engine_shell.h"

#include <fmt/format.h>

namespace sluice::engine {

SubmitResult submit_rejected(std::string message, std::string param) {
  return {.status = SubmitStatus::rejected, .stream = nullptr, .message = std::move(message), .param = std::move(param),
          .code = {}};
}

EngineStats engine_stats(const SchedulerStats& s, int32_t num_active_requests, int32_t num_kv_blocks,
                         int32_t block_size, uint64_t kv_cache_bytes) {
  EngineStats stats;
  stats.num_running = s.num_running;
  stats.num_waiting = s.num_waiting;
  stats.num_active_requests = num_active_requests;
  stats.kv_cache_usage = s.kv_cache_usage;
  stats.num_kv_blocks = num_kv_blocks;
  stats.block_size = block_size;
  stats.kv_cache_bytes = kv_cache_bytes;
  stats.num_prefix_cache_queries = s.num_prefix_cache_queries;
  stats.num_prefix_cache_hits = s.num_prefix_cache_hits;
  stats.num_preemptions = s.num_preemptions;
  stats.num_prompt_tokens = s.num_prompt_tokens;
  stats.num_generation_tokens = s.num_generation_tokens;
  stats.num_steps = s.num_steps;
  stats.num_iteration_tokens = s.num_iteration_tokens;
  stats.num_finished = s.num_finished;
  return stats;
}

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

EngineHealth step_health(int64_t step_started_ns, std::chrono::nanoseconds step_timeout) {
  if (step_started_ns == 0 || step_timeout <= std::chrono::nanoseconds::zero()) return {};
  const auto running = std::chrono::nanoseconds(steady_now_ns() - step_started_ns);
  if (running <= step_timeout) return {};
  return {false, "wedged",
          fmt::format("a step has been running for {:.1f} s", std::chrono::duration<double>(running).count())};
}

}  // namespace sluice::engine
