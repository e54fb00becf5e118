#pragma once
// Raises spdlog's level to warn for a scope: the engine logs its KV cache and every
// request at info, which a command that prints its own report (bench, generate)
// must not mix into its output.
#include <spdlog/spdlog.h>

namespace sluice::server {

class QuietLog {
 public:
  QuietLog() : saved_(spdlog::get_level()) { spdlog::set_level(spdlog::level::warn); }
  ~QuietLog() { spdlog::set_level(saved_); }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;

 private:
  spdlog::level::level_enum saved_;
};

}  // namespace sluice::server
