#include "server/metrics/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sluice::server {
namespace {

struct ProcStat {
  double utime_ticks = 0, stime_ticks = 0, start_ticks = 0;
  double vsize_bytes = 0, rss_pages = 0;
};

// /proc/self/stat: the command name (field 2) may contain spaces and parentheses,
// so fields are counted from the last ')'.
ProcStat read_proc_stat() {
  ProcStat stat;
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return stat;
  size_t close = line.rfind(')');
  if (close == std::string::npos) return stat;
  std::istringstream fields(line.substr(close + 2));
  std::string field;
  for (int index = 3; fields >> field; ++index) {  // field numbers as in proc(5)
    switch (index) {
      case 14: stat.utime_ticks = std::stod(field); break;
      case 15: stat.stime_ticks = std::stod(field); break;
      case 22: stat.start_ticks = std::stod(field); break;
      case 23: stat.vsize_bytes = std::stod(field); break;
      case 24: stat.rss_pages = std::stod(field); return stat;
      default: break;
    }
  }
  return stat;
}

double boot_time_seconds() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime") {
      in >> value;
      return value;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

double count_open_fds() {
  std::error_code ec;
  double count = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++count;
  return count > 0 ? count - 1 : 0;  // minus the descriptor the iteration itself holds
}

prometheus::MetricFamily single(const char* name, const char* help, prometheus::MetricType type,
                                double value) {
  prometheus::MetricFamily family{name, help, type, {}};
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter)
    metric.counter.value = value;
  else
    metric.gauge.value = value;
  family.metric.push_back(metric);
  return family;
}

}  // namespace

ProcessMetrics::ProcessMetrics()
    : page_bytes_(sysconf(_SC_PAGESIZE)), ticks_per_second_(sysconf(_SC_CLK_TCK)) {
  double boot = boot_time_seconds();
  ProcStat stat = read_proc_stat();
  start_time_seconds_ = boot > 0 ? boot + stat.start_ticks / static_cast<double>(ticks_per_second_)
                                 : std::chrono::duration<double>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count();
}

std::vector<prometheus::MetricFamily> ProcessMetrics::collect() const {
  using prometheus::MetricType;
  ProcStat stat = read_proc_stat();
  rlimit limit{};
  double max_fds = getrlimit(RLIMIT_NOFILE, &limit) == 0 ? static_cast<double>(limit.rlim_cur) : 0;
  double cpu_seconds = (stat.utime_ticks + stat.stime_ticks) / static_cast<double>(ticks_per_second_);
  return {
      single("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
             MetricType::Counter, cpu_seconds),
      single("process_resident_memory_bytes", "Resident memory size in bytes.", MetricType::Gauge,
             stat.rss_pages * static_cast<double>(page_bytes_)),
      single("process_virtual_memory_bytes", "Virtual memory size in bytes.", MetricType::Gauge,
             stat.vsize_bytes),
      single("process_open_fds", "Number of open file descriptors.", MetricType::Gauge,
             count_open_fds()),
      single("process_max_fds", "Maximum number of open file descriptors.", MetricType::Gauge,
             max_fds),
      single("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
             MetricType::Gauge, start_time_seconds_),
  };
}

}  // namespace sluice::server
