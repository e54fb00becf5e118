#pragma once
// Structured outputs of one text model (label model_name):
//   sluice_structured_output_requests_total{kind}          requests with a constraint
//   sluice_structured_output_compile_seconds               histogram: a grammar's compilation (cache misses)
//   sluice_structured_output_cache_lookups_total{result}   hit | miss (an error counts as a miss)
// (sluice_structured_output_masked_tokens_total is an engine series: engine_metrics.h.)
// Thread-safe: the routes record from the I/O and tokenizer threads
// (prometheus-cpp series are atomic).
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>
#include <string_view>

namespace sluice::server {

class GrammarMetrics {
 public:
  GrammarMetrics(prometheus::Registry& registry, std::string model_name);
  ~GrammarMetrics();
  GrammarMetrics(const GrammarMetrics&) = delete;
  GrammarMetrics& operator=(const GrammarMetrics&) = delete;

  void on_request(std::string_view kind);
  void on_lookup(bool hit, double compile_seconds);

 private:
  std::string model_name_;
  prometheus::Family<prometheus::Counter>& requests_family_;
  prometheus::Family<prometheus::Histogram>& compile_family_;
  prometheus::Family<prometheus::Counter>& lookups_family_;
  prometheus::Histogram& compile_seconds_;
  prometheus::Counter& hits_;
  prometheus::Counter& misses_;
};

}  // namespace sluice::server
