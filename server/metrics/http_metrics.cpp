#include "server/metrics/http_metrics.h"

#include <prometheus/text_serializer.h>

namespace sluice::server {
namespace {

// From half a millisecond (a /health hit) to two minutes (a long generation).
const prometheus::Histogram::BucketBoundaries kDurationBuckets = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5,    1,     2.5,    5,     10,   20,    30,   60,  120};

}  // namespace

std::string_view method_label(std::string_view method) {
  // "-": the request line never parsed; a value of ours, not the client's.
  static constexpr std::string_view kKnown[] = {"GET",     "HEAD",    "POST",  "PUT", "DELETE",
                                                "OPTIONS", "CONNECT", "TRACE", "PATCH", "-"};
  for (std::string_view known : kKnown) {
    if (method == known) return known;
  }
  return "OTHER";
}

HttpMetrics::HttpMetrics(prometheus::Registry& registry)
    : requests_in_flight(prometheus::BuildGauge()
                             .Name("sluice_http_requests_in_flight")
                             .Help("HTTP requests being served right now")
                             .Register(registry)
                             .Add({})),
      connections_open(prometheus::BuildGauge()
                           .Name("sluice_http_connections_open")
                           .Help("Open client connections")
                           .Register(registry)
                           .Add({})),
      connections_rejected(prometheus::BuildCounter()
                               .Name("sluice_http_connections_rejected_total")
                               .Help("Connections turned away because max_connections were open")
                               .Register(registry)
                               .Add({})),
      requests_(prometheus::BuildCounter()
                    .Name("sluice_http_requests_total")
                    .Help("HTTP requests answered, by route pattern, method and status")
                    .Register(registry)),
      durations_(prometheus::BuildHistogram()
                     .Name("sluice_http_request_duration_seconds")
                     .Help("Time from a request's first header byte to its response written")
                     .Register(registry)) {}

void HttpMetrics::record(std::string_view route, std::string_view method, unsigned status,
                         double duration_seconds) {
  std::string route_label(route), method_name(method_label(method));
  requests_
      .Add({{"route", route_label}, {"method", method_name}, {"status", std::to_string(status)}})
      .Increment();
  durations_.Add({{"route", route_label}, {"method", method_name}}, kDurationBuckets)
      .Observe(duration_seconds);
}

std::string MetricsExposition::render() const {
  auto families = registry_.Collect();
  auto process = process_.collect();
  families.insert(families.end(), process.begin(), process.end());
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace sluice::server
