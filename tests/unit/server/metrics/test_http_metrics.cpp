#include <doctest/doctest.h>

#include <prometheus/registry.h>

#include <set>
#include <string>

#include "server/metrics/http_metrics.h"

namespace unit_server_metrics_test_http_metrics {

using namespace sluice::server;

namespace {

// The distinct values of `label` across every series of `family_name`.
std::set<std::string> label_values(prometheus::Registry& registry, const std::string& family_name,
                                   const std::string& label) {
  std::set<std::string> values;
  for (const auto& family : registry.Collect()) {
    if (family.name != family_name) continue;
    for (const auto& metric : family.metric) {
      for (const auto& pair : metric.label) {
        if (pair.name == label) values.insert(pair.value);
      }
    }
  }
  return values;
}

}  // namespace

TEST_CASE("standard methods keep their name; invented ones are OTHER") {
  for (const char* method : {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"}) {
    CHECK(method_label(method) == method);
  }
  CHECK(method_label("-") == "-");
  for (const char* method : {"FOO", "get", "GETX", "PROPFIND", "", "M-SEARCH"}) {
    CAPTURE(method);
    CHECK(method_label(method) == "OTHER");
  }
}

TEST_CASE("a flood of invented methods adds no series") {
  prometheus::Registry registry;
  HttpMetrics metrics(registry);
  metrics.record("/health", "GET", 200, 0.001);
  for (int i = 0; i < 1000; ++i) metrics.record("unmatched", "X" + std::to_string(i), 405, 0.001);
  CHECK(label_values(registry, "sluice_http_requests_total", "method") ==
        std::set<std::string>{"GET", "OTHER"});
  CHECK(label_values(registry, "sluice_http_request_duration_seconds", "method") ==
        std::set<std::string>{"GET", "OTHER"});
}

TEST_CASE("a held gauge comes back down however its scope ends, exceptions of any type included") {
  prometheus::Registry registry;
  HttpMetrics metrics(registry);
  {
    GaugeHold held(metrics.requests_in_flight);
    CHECK(metrics.requests_in_flight.Value() == 1);
  }
  CHECK(metrics.requests_in_flight.Value() == 0);
  try {
    GaugeHold held(metrics.connections_open);
    throw 42;
  } catch (...) {
  }
  CHECK(metrics.connections_open.Value() == 0);
}
}  // namespace unit_server_metrics_test_http_metrics
