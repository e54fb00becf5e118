#pragma once
// The standard process_* metrics (resident and virtual memory, CPU seconds, open
// and max file descriptors, start time), read from /proc at scrape time.
// Stateless apart from the page size and clock tick: any thread may call collect().
#include <prometheus/metric_family.h>

#include <vector>

namespace sluice::server {

class ProcessMetrics {
 public:
  ProcessMetrics();
  std::vector<prometheus::MetricFamily> collect() const;

 private:
  long page_bytes_;
  long ticks_per_second_;
  double start_time_seconds_;  // unix time the process started
};

}  // namespace sluice::server
