#include "server/metrics/grammar_metrics.h"

namespace sluice::server {
namespace {

// A regex or a small schema compiles in well under a millisecond; a large schema on a
// 262k vocabulary can take far longer.
const prometheus::Histogram::BucketBoundaries kCompileBuckets = {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025,
                                                                 0.05,   0.1,    0.25,  0.5,   1.0,  2.5};

}  // namespace

GrammarMetrics::GrammarMetrics(prometheus::Registry& registry, std::string model_name)
    : model_name_(std::move(model_name)),
      requests_family_(prometheus::BuildCounter()
                           .Name("sluice_structured_output_requests_total")
                           .Help("Requests whose output a grammar constrained, by kind.")
                           .Register(registry)),
      compile_family_(prometheus::BuildHistogram()
                          .Name("sluice_structured_output_compile_seconds")
                          .Help("Seconds to compile a request's output constraint (cache misses).")
                          .Register(registry)),
      lookups_family_(prometheus::BuildCounter()
                          .Name("sluice_structured_output_cache_lookups_total")
                          .Help("Compiled-grammar cache lookups, by result (hit or miss).")
                          .Register(registry)),
      compile_seconds_(compile_family_.Add({{"model_name", model_name_}}, kCompileBuckets)),
      hits_(lookups_family_.Add({{"model_name", model_name_}, {"result", "hit"}})),
      misses_(lookups_family_.Add({{"model_name", model_name_}, {"result", "miss"}})) {}

GrammarMetrics::~GrammarMetrics() {
  compile_family_.Remove(&compile_seconds_);
  lookups_family_.Remove(&hits_);
  lookups_family_.Remove(&misses_);
  for (std::string_view kind : {"json_schema", "json_object", "regex", "choice", "grammar"}) {
    auto labels = prometheus::Labels{{"model_name", model_name_}, {"kind", std::string(kind)}};
    if (requests_family_.Has(labels)) requests_family_.Remove(&requests_family_.Add(labels));
  }
}

void GrammarMetrics::on_request(std::string_view kind) {
  requests_family_.Add({{"model_name", model_name_}, {"kind", std::string(kind)}}).Increment();
}

void GrammarMetrics::on_lookup(bool hit, double compile_seconds) {
  if (hit) {
    hits_.Increment();
    return;
  }
  misses_.Increment();
  if (compile_seconds > 0) compile_seconds_.Observe(compile_seconds);
}


}  // namespace sluice::server
