#include "engine/engine_shell.h"

#include <fmt/format.h>

namespace sluice::engine {

SubmitResult submit_rejected(std::string message, std::string param) {
  return {.status = SubmitStatus::rejected, .stream = nullptr, .message = std::move(message), .param = std::move(param),
          .code = {}};
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
