#pragma once
// What the kernel counts about one thread of this process (Linux: /proc/self/task),
// so that a test can show a thread asleep: one blocked on a condition variable adds
// nothing to its context switches or CPU time, one that polls with a timed wait adds
// a switch per wake-up, and one that spins adds CPU time. Elsewhere: nullopt.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#ifdef __linux__
#include <filesystem>
#include <fstream>
#include <sstream>
#endif

namespace sluice::testing {

struct ThreadActivity {
  char state = '?';           // R running, S sleeping, D disk wait, ...
  uint64_t num_switches = 0;  // voluntary + involuntary context switches
  uint64_t cpu_ticks = 0;     // user + system time, in clock ticks (usually 10 ms)
};

// The ids of this process's threads.
inline std::set<pid_t> thread_ids() {
  std::set<pid_t> ids;
#ifdef __linux__
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task", ec))
    ids.insert(static_cast<pid_t>(std::stol(entry.path().filename().string())));
#endif
  return ids;
}

inline std::optional<ThreadActivity> read_thread_activity(pid_t tid) {
#ifdef __linux__
  const std::string dir = "/proc/self/task/" + std::to_string(tid) + "/";
  ThreadActivity activity;
  std::ifstream status(dir + "status");
  if (!status) return std::nullopt;
  bool has_switches = false;
  for (std::string line; std::getline(status, line);) {
    std::istringstream fields(line);
    std::string key;
    uint64_t value = 0;
    fields >> key >> value;
    if (key == "voluntary_ctxt_switches:" || key == "nonvoluntary_ctxt_switches:") {
      activity.num_switches += value;
      has_switches = true;
    }
  }
  // stat: "pid (comm) state ppid ...": state is the first field after the name,
  // utime and stime the 12th and 13th after it.
  std::ifstream stat_file(dir + "stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  const size_t name_end = stat.rfind(')');
  if (!has_switches || name_end == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(name_end + 1));
  std::string field;
  for (int i = 1; i <= 13 && fields >> field; ++i) {
    if (i == 1) activity.state = field.empty() ? '?' : field[0];
    if (i == 12 || i == 13) activity.cpu_ticks += std::stoull(field);
  }
  return activity;
#else
  (void)tid;
  return std::nullopt;
#endif
}

}  // namespace sluice::testing
