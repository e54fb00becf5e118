#pragma once
// The metrics of the HTTP side, registered on the daemon's one prometheus
// registry. prometheus-cpp metrics are atomic and family lookups lock, so any I/O
// thread may record.
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>
#include <string_view>

#include "server/metrics/process_metrics.h"

namespace sluice::server {

// The `method` label of a request method: the standard methods by name, anything
// else "OTHER". Every distinct label value is a series kept until exit, so no label
// may take a string the client chose.
std::string_view method_label(std::string_view method);

// A gauge raised for as long as this lives, however the scope ends (a return, an
// exception, a coroutine destroyed at shutdown): in-flight and open counts stay
// right whatever happens to the request.
class GaugeHold {
 public:
  explicit GaugeHold(prometheus::Gauge& gauge) : gauge_(gauge) { gauge_.Increment(); }
  ~GaugeHold() { gauge_.Decrement(); }
  GaugeHold(const GaugeHold&) = delete;
  GaugeHold& operator=(const GaugeHold&) = delete;

 private:
  prometheus::Gauge& gauge_;
};

class HttpMetrics {
 public:
  explicit HttpMetrics(prometheus::Registry& registry);

  // One finished request. `route` is the matched pattern or "unmatched" and `method`
  // goes through method_label(), which keeps the label sets bounded whatever paths
  // and methods clients send; status codes are the server's own.
  void record(std::string_view route, std::string_view method, unsigned status,
              double duration_seconds);

  prometheus::Gauge& requests_in_flight;
  prometheus::Gauge& connections_open;
  prometheus::Counter& connections_rejected;

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& durations_;
};

// Everything /metrics shows: the registry (HTTP now, engine later) plus process_*.
class MetricsExposition {
 public:
  explicit MetricsExposition(prometheus::Registry& registry) : registry_(registry) {}
  std::string render() const;  // Prometheus text format 0.0.4
  static constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

 private:
  prometheus::Registry& registry_;
  ProcessMetrics process_;
};

}  // namespace sluice::server
