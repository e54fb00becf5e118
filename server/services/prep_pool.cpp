#include "server/services/prep_pool.h"

#include <algorithm>
#include <string>
#include <thread>

namespace sluice::server {

PrepPool::PrepPool(int num_threads, int max_jobs, prometheus::Registry* registry)
    : num_threads_(std::max(1, num_threads)),
      max_jobs_(std::max(1, max_jobs)),
      pool_(static_cast<size_t>(num_threads_)) {
  if (!registry) return;
  jobs_gauge_ = &prometheus::BuildGauge()
                     .Name("sluice_tokenizer_jobs")
                     .Help("Requests tokenizing (or rendering a chat template) or waiting for a tokenizer thread")
                     .Register(*registry)
                     .Add({});
  rejected_ = &prometheus::BuildCounter()
                   .Name("sluice_tokenizer_rejected_total")
                   .Help("Requests refused with 429 because tokenizer_queue_size requests were tokenizing or waiting")
                   .Register(*registry)
                   .Add({});
}

PrepPool::~PrepPool() { join(); }

void PrepPool::join() {
  if (!joined_.exchange(true)) pool_.join();
}

bool PrepPool::try_reserve() {
  int jobs = jobs_.load();
  do {
    if (jobs >= max_jobs_) {
      if (rejected_) rejected_->Increment();
      return false;
    }
  } while (!jobs_.compare_exchange_weak(jobs, jobs + 1));
  if (jobs_gauge_) jobs_gauge_->Increment();
  return true;
}

void PrepPool::release() {
  jobs_.fetch_sub(1);
  if (jobs_gauge_) jobs_gauge_->Decrement();
}

proto::ApiError prep_pool_full(const PrepPool& prep) {
  return {429,
          "The server is busy: " + std::to_string(prep.max_jobs()) +
              " requests are already being tokenized or waiting to be; retry shortly.",
          "rate_limit_error", "", "tokenizer_busy"};
}

int prep_threads(int configured) {
  if (configured > 0) return configured;
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 2, 2, 8);
}

}  // namespace sluice::server
