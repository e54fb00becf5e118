#include <doctest/doctest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "server/metrics/engine_metrics.h"

namespace unit_server_metrics_test_engine_metrics {

using namespace sluice;
using sluice::server::EngineMetrics;

namespace {

std::string render(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

// The value of one series, `series` spelled as the serializer writes it (labels
// sorted by name, `le` last); NaN, which equals nothing, when the series is absent.
double value(const std::string& text, const std::string& series) {
  std::string needle = "\n" + series + " ";
  auto at = ("\n" + text).find(needle);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(text.c_str() + at + needle.size() - 1, nullptr);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

engine::EngineStats stats_a() {
  engine::EngineStats s;
  s.num_running = 3;
  s.num_waiting = 2;
  s.num_pending = 1;
  s.kv_cache_usage = 0.25;
  s.num_prefix_cache_queries = 100;
  s.num_prefix_cache_hits = 40;
  s.num_preemptions = 1;
  s.num_prompt_tokens = 120;
  s.num_generation_tokens = 64;
  s.num_finished[static_cast<size_t>(engine::FinishReason::stop)] = 4;
  s.num_finished[static_cast<size_t>(engine::FinishReason::length)] = 2;
  s.num_finished[static_cast<size_t>(engine::FinishReason::abort)] = 1;
  return s;
}

}  // namespace

TEST_CASE("two models share one registry: one family each, one series per model") {
  prometheus::Registry registry;
  EngineMetrics a(registry, "model-a");
  EngineMetrics b(registry, "model-b");

  a.refresh(stats_a());
  engine::EngineStats sb;
  sb.num_running = 7;
  sb.kv_cache_usage = 0.5;
  sb.num_generation_tokens = 9;
  b.refresh(sb);

  const std::string text = render(registry);
  CHECK(count(text, "# TYPE sluice_num_requests_running gauge") == 1);
  CHECK(count(text, "# TYPE sluice_request_success_total counter") == 1);
  CHECK(count(text, "# TYPE sluice_time_to_first_token_seconds histogram") == 1);

  CHECK(value(text, R"(sluice_num_requests_running{model_name="model-a"})") == 3);
  CHECK(value(text, R"(sluice_num_requests_running{model_name="model-b"})") == 7);
  CHECK(value(text, R"(sluice_num_requests_waiting{model_name="model-a"})") == 3);  // 2 + 1 pending
  CHECK(value(text, R"(sluice_kv_cache_usage_perc{model_name="model-a"})") == 0.25);
  CHECK(value(text, R"(sluice_kv_cache_usage_perc{model_name="model-b"})") == 0.5);
  CHECK(value(text, R"(sluice_prefix_cache_queries_total{model_name="model-a"})") == 100);
  CHECK(value(text, R"(sluice_prefix_cache_hits_total{model_name="model-a"})") == 40);
  CHECK(value(text, R"(sluice_num_preemptions_total{model_name="model-a"})") == 1);
  CHECK(value(text, R"(sluice_prompt_tokens_total{model_name="model-a"})") == 120);
  CHECK(value(text, R"(sluice_generation_tokens_total{model_name="model-a"})") == 64);
  CHECK(value(text, R"(sluice_generation_tokens_total{model_name="model-b"})") == 9);

  const char* success = "sluice_request_success_total";
  CHECK(value(text, std::string(success) + R"({finished_reason="stop",model_name="model-a"})") == 4);
  CHECK(value(text, std::string(success) + R"({finished_reason="length",model_name="model-a"})") == 2);
  CHECK(value(text, std::string(success) + R"({finished_reason="abort",model_name="model-a"})") == 1);
  // Every reason is there from the start, at zero; "none" never is.
  for (const char* reason : {"timeout", "error"}) {
    CAPTURE(reason);
    CHECK(value(text, std::string(success) + R"({finished_reason=")" + reason +
                          R"(",model_name="model-a"})") == 0);
    CHECK(value(text, std::string(success) + R"({finished_reason=")" + reason +
                          R"(",model_name="model-b"})") == 0);
  }
  CHECK(text.find(R"(finished_reason="")") == std::string::npos);
}

TEST_CASE("cumulative engine totals become counters that grow by the delta") {
  prometheus::Registry registry;
  EngineMetrics m(registry, "m");
  auto s = stats_a();
  m.refresh(s);
  m.refresh(s);  // nothing new: no double counting
  const std::string series = R"(sluice_prompt_tokens_total{model_name="m"})";
  CHECK(value(render(registry), series) == 120);

  s.num_prompt_tokens = 150;
  s.num_finished[static_cast<size_t>(engine::FinishReason::stop)] = 5;
  m.refresh(s);
  auto text = render(registry);
  CHECK(value(text, series) == 150);
  CHECK(value(text, R"(sluice_request_success_total{finished_reason="stop",model_name="m"})") == 5);

  // A total that steps back is not counted again when it comes back up.
  const std::string length = R"(sluice_request_success_total{finished_reason="length",model_name="m"})";
  s.num_finished[static_cast<size_t>(engine::FinishReason::length)] = 1;
  m.refresh(s);
  CHECK(value(render(registry), length) == 2);
  s.num_finished[static_cast<size_t>(engine::FinishReason::length)] = 3;
  m.refresh(s);
  CHECK(value(render(registry), length) == 3);

  // Gauges follow the snapshot both ways.
  s.num_running = 0;
  s.kv_cache_usage = 0.0;
  m.refresh(s);
  text = render(registry);
  CHECK(value(text, R"(sluice_num_requests_running{model_name="m"})") == 0);
  CHECK(value(text, R"(sluice_kv_cache_usage_perc{model_name="m"})") == 0);

  // Concurrent scrapes add each delta once.
  s.num_prompt_tokens = 1150;
  std::vector<std::thread> scrapers;
  for (int i = 0; i < 4; ++i) scrapers.emplace_back([&] { m.refresh(s); });
  for (auto& t : scrapers) t.join();
  CHECK(value(render(registry), series) == 1150);
}

TEST_CASE("observer callbacks feed the histograms") {
  prometheus::Registry registry;
  EngineMetrics a(registry, "a");
  EngineMetrics b(registry, "b");
  engine::EngineObserver& observer = a;  // the engine sees only the interface

  observer.on_first_token(0.05);
  observer.on_first_token(0.3);
  for (int i = 0; i < 10; ++i) observer.on_inter_token_latency(0.02);
  observer.on_step({.num_batched_tokens = 100});
  observer.on_step({.num_batched_tokens = 0});  // an idle step is not an iteration
  engine::RequestMetrics r;
  r.finish_reasons = {engine::FinishReason::stop};
  r.num_prompt_tokens = 30;
  r.num_generation_tokens = 11;
  r.queue_time_s = 0.2;
  r.ttft_s = 0.3;
  r.e2e_s = 1.2;
  observer.on_request_finished(r);
  engine::RequestMetrics never_scheduled;
  never_scheduled.finish_reasons = {engine::FinishReason::abort};
  never_scheduled.num_prompt_tokens = 5;
  never_scheduled.e2e_s = 0.1;
  observer.on_request_finished(never_scheduled);
  b.on_first_token(3.0);

  const std::string text = render(registry);
  const std::string ttft = "sluice_time_to_first_token_seconds";
  CHECK(value(text, ttft + R"(_count{model_name="a"})") == 2);
  CHECK(value(text, ttft + R"(_sum{model_name="a"})") == doctest::Approx(0.35));
  CHECK(value(text, ttft + R"(_bucket{model_name="a",le="0.04"})") == 0);
  CHECK(value(text, ttft + R"(_bucket{model_name="a",le="0.06"})") == 1);
  CHECK(value(text, ttft + R"(_bucket{model_name="a",le="0.5"})") == 2);
  CHECK(value(text, ttft + R"(_bucket{model_name="a",le="+Inf"})") == 2);
  CHECK(value(text, ttft + R"(_count{model_name="b"})") == 1);
  CHECK(value(text, ttft + R"(_bucket{model_name="b",le="2.5"})") == 0);
  CHECK(value(text, ttft + R"(_bucket{model_name="b",le="5"})") == 1);

  const std::string itl = "sluice_inter_token_latency_seconds";
  CHECK(value(text, itl + R"(_count{model_name="a"})") == 10);
  CHECK(value(text, itl + R"(_bucket{model_name="a",le="0.01"})") == 0);
  CHECK(value(text, itl + R"(_bucket{model_name="a",le="0.025"})") == 10);
  CHECK(value(text, itl + R"(_count{model_name="b"})") == 0);

  CHECK(value(text, R"(sluice_iteration_tokens_count{model_name="a"})") == 1);
  CHECK(value(text, R"(sluice_iteration_tokens_bucket{model_name="a",le="64"})") == 0);
  CHECK(value(text, R"(sluice_iteration_tokens_bucket{model_name="a",le="128"})") == 1);

  CHECK(value(text, R"(sluice_e2e_request_latency_seconds_count{model_name="a"})") == 2);
  CHECK(value(text, R"(sluice_e2e_request_latency_seconds_sum{model_name="a"})") ==
        doctest::Approx(1.3));
  CHECK(value(text, R"(sluice_request_queue_time_seconds_count{model_name="a"})") == 1);
  CHECK(value(text, R"(sluice_request_queue_time_seconds_bucket{model_name="a",le="0.3"})") == 1);
  CHECK(value(text, R"(sluice_request_prompt_tokens_sum{model_name="a"})") == 35);
  CHECK(value(text, R"(sluice_request_prompt_tokens_bucket{model_name="a",le="20"})") == 1);
  CHECK(value(text, R"(sluice_request_prompt_tokens_bucket{model_name="a",le="50"})") == 2);
  CHECK(value(text, R"(sluice_request_generation_tokens_bucket{model_name="a",le="10"})") == 1);
  CHECK(value(text, R"(sluice_request_generation_tokens_bucket{model_name="a",le="20"})") == 2);
  CHECK(value(text, R"(sluice_request_generation_tokens_bucket{model_name="a",le="100000"})") == 2);
}

TEST_CASE("models come and go; the families leave with the last one") {
  prometheus::Registry registry;
  auto a = std::make_unique<EngineMetrics>(registry, "a");
  {
    EngineMetrics b(registry, "b");
    CHECK_THROWS_AS(EngineMetrics(registry, "b"), std::invalid_argument);
    auto text = render(registry);
    CHECK(value(text, R"(sluice_num_requests_running{model_name="b"})") == 0);
  }
  auto text = render(registry);
  CHECK(value(text, R"(sluice_num_requests_running{model_name="a"})") == 0);
  CHECK(text.find(R"(model_name="b")") == std::string::npos);

  a.reset();
  CHECK(render(registry).find("sluice_") == std::string::npos);

  EngineMetrics again(registry, "a");  // a reload registers the families anew
  again.on_first_token(0.1);
  CHECK(value(render(registry), R"(sluice_time_to_first_token_seconds_count{model_name="a"})") ==
        1);
}

TEST_CASE("a registry that refuses duplicate family names still takes several models") {
  prometheus::Registry registry(prometheus::Registry::InsertBehavior::Throw);
  EngineMetrics a(registry, "a");
  EngineMetrics b(registry, "b");
  auto text = render(registry);
  CHECK(count(text, "# TYPE sluice_kv_cache_usage_perc gauge") == 1);
  CHECK(value(text, R"(sluice_kv_cache_usage_perc{model_name="b"})") == 0);
}

namespace {

// Feeds `m` one of everything: a refresh and every observer callback.
void feed(EngineMetrics& m) {
  auto s = stats_a();
  s.block_size = 16;
  s.num_kv_blocks = 512;
  m.refresh(s);
  m.on_first_token(0.05);
  m.on_inter_token_latency(0.02);
  m.on_inter_token_latency(0.2);
  m.on_step({.num_batched_tokens = 100, .num_constrained = 2});
  engine::RequestMetrics r;
  r.finish_reasons = {engine::FinishReason::stop};
  r.num_prompt_tokens = 30;
  r.num_generation_tokens = 11;
  r.queue_time_s = 0.2;
  r.e2e_s = 1.2;
  m.on_request_finished(r);
}

}  // namespace

TEST_CASE("vLLM's names show the same values as sluice's, with the same types") {
  prometheus::Registry registry;
  EngineMetrics m(registry, "m", /*with_vllm_names=*/true);
  feed(m);
  const std::string text = render(registry);

  // Stem -> type; the exposition names a counter's family with its _total.
  const std::vector<std::pair<std::string, std::string>> families = {
      {"num_requests_running", "gauge"},
      {"num_requests_waiting", "gauge"},
      {"kv_cache_usage_perc", "gauge"},
      {"cache_config_info", "gauge"},
      {"prefix_cache_queries_total", "counter"},
      {"prefix_cache_hits_total", "counter"},
      {"num_preemptions_total", "counter"},
      {"prompt_tokens_total", "counter"},
      {"generation_tokens_total", "counter"},
      {"request_success_total", "counter"},
      {"time_to_first_token_seconds", "histogram"},
      {"inter_token_latency_seconds", "histogram"},
      {"e2e_request_latency_seconds", "histogram"},
      {"request_queue_time_seconds", "histogram"},
      {"request_prompt_tokens", "histogram"},
      {"request_generation_tokens", "histogram"},
  };
  for (const auto& [stem, type] : families) {
    CAPTURE(stem);
    CHECK(count(text, "# TYPE vllm:" + stem + " " + type + "\n") == 1);
    CHECK(count(text, "# TYPE sluice_" + stem + " " + type + "\n") == 1);
  }
  // Every series of each family, value for value.
  const std::vector<std::string> series = {
      R"(num_requests_running{model_name="m"})",
      R"(num_requests_waiting{model_name="m"})",
      R"(kv_cache_usage_perc{model_name="m"})",
      R"(prefix_cache_queries_total{model_name="m"})",
      R"(prefix_cache_hits_total{model_name="m"})",
      R"(num_preemptions_total{model_name="m"})",
      R"(prompt_tokens_total{model_name="m"})",
      R"(generation_tokens_total{model_name="m"})",
      R"(request_success_total{finished_reason="stop",model_name="m"})",
      R"(request_success_total{finished_reason="length",model_name="m"})",
      R"(time_to_first_token_seconds_count{model_name="m"})",
      R"(time_to_first_token_seconds_bucket{model_name="m",le="0.06"})",
      R"(inter_token_latency_seconds_count{model_name="m"})",
      R"(inter_token_latency_seconds_sum{model_name="m"})",
      R"(e2e_request_latency_seconds_sum{model_name="m"})",
      R"(request_queue_time_seconds_count{model_name="m"})",
      R"(request_prompt_tokens_sum{model_name="m"})",
      R"(request_generation_tokens_sum{model_name="m"})",
  };
  for (const std::string& s : series) {
    CAPTURE(s);
    const double sluice = value(text, "sluice_" + s);
    CHECK(sluice > 0);
    CHECK(value(text, "vllm:" + s) == sluice);
  }
  CHECK(value(text, R"(vllm:num_requests_waiting{model_name="m"})") == 3);
  CHECK(value(text, R"(vllm:kv_cache_usage_perc{model_name="m"})") == 0.25);  // a fraction, as vLLM's

  // The KV cache's configuration in the labels, as vLLM's cache_config_info.
  const std::string info = R"({block_size="16",model_name="m",num_cpu_blocks="0",num_gpu_blocks="512"})";
  CHECK(value(text, "vllm:cache_config_info" + info) == 1);
  CHECK(value(text, "sluice_cache_config_info" + info) == 1);

  // vLLM's older name of the inter-token latency; sluice's extras stay sluice's.
  CHECK(value(text, R"(vllm:time_per_output_token_seconds_count{model_name="m"})") == 2);
  CHECK(value(text, R"(sluice_iteration_tokens_count{model_name="m"})") == 1);
  CHECK(value(text, R"(sluice_structured_output_masked_tokens_total{model_name="m"})") == 2);
  CHECK(text.find("vllm:iteration_tokens") == std::string::npos);
  CHECK(text.find("vllm:structured_output") == std::string::npos);
}

TEST_CASE("without vLLM's names only sluice_* is shown; both namings come and go per model") {
  prometheus::Registry registry(prometheus::Registry::InsertBehavior::Throw);
  {
    EngineMetrics plain(registry, "plain");
    feed(plain);
    const std::string text = render(registry);
    CHECK(text.find("vllm:") == std::string::npos);
    CHECK(value(text, R"(sluice_prompt_tokens_total{model_name="plain"})") == 120);
  }
  auto a = std::make_unique<EngineMetrics>(registry, "a", true);
  {
    EngineMetrics b(registry, "b", true);
    CHECK_THROWS_AS(EngineMetrics(registry, "b", true), std::invalid_argument);
    feed(b);
    const std::string text = render(registry);
    CHECK(count(text, "# TYPE vllm:prompt_tokens_total counter") == 1);
    CHECK(value(text, R"(vllm:prompt_tokens_total{model_name="b"})") == 120);
    CHECK(value(text, R"(vllm:prompt_tokens_total{model_name="a"})") == 0);
  }
  CHECK(render(registry).find(R"(model_name="b")") == std::string::npos);
  a.reset();
  CHECK(render(registry).empty());
}
}  // namespace unit_server_metrics_test_engine_metrics
