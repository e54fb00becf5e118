#pragma once
// The threads that prepare requests: tokenizing a prompt and rendering a chat template
// cost CPU time in proportion to the text, and on an I/O thread that time would hold
// up every other connection of that thread (/health, /metrics, other clients'
// streams). Handlers hand that work here and wait for it without blocking.
//
// Bounded: at most `max_jobs` jobs wait or run at once; past that run() refuses at
// once (the caller answers 429), so a flood of large texts costs queue slots, not
// memory or latency for everyone.
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/thread_pool.hpp>

#include <atomic>
#include <optional>
#include <type_traits>

#include "proto/errors.h"
#include "server/http/http.h"

namespace sluice::server {

class PrepPool {
 public:
  // With a registry, the pool shows sluice_tokenizer_jobs (waiting or running) and
  // sluice_tokenizer_rejected_total (refused: the pool was full).
  PrepPool(int num_threads, int max_jobs, prometheus::Registry* registry = nullptr);
  ~PrepPool();  // join()
  PrepPool(const PrepPool&) = delete;
  PrepPool& operator=(const PrepPool&) = delete;

  int num_threads() const { return num_threads_; }
  int max_jobs() const { return max_jobs_; }
  int jobs() const { return jobs_.load(); }  // waiting or running now

  // Runs `work()` on a pool thread; the calling coroutine resumes on its own executor
  // with the result, or with the exception `work` threw. nullopt: the pool is full
  // and nothing ran.
  template <class Work>
  asio::awaitable<std::optional<std::invoke_result_t<Work&>>> run(Work work) {
    using Result = std::invoke_result_t<Work&>;
    if (!try_reserve()) co_return std::nullopt;
    Reservation reservation(*this);
    // `work` lives in this frame, which waits for the pool coroutine to finish.
    co_return co_await asio::co_spawn(
        pool_.get_executor(), [&work]() -> asio::awaitable<Result> { co_return work(); }, asio::use_awaitable);
  }

  // Waits for the jobs in hand to finish and stops the threads (the shutdown path);
  // later calls do nothing.
  void join();

 private:
  struct Reservation {
    explicit Reservation(PrepPool& pool) : pool(pool) {}
    ~Reservation() { pool.release(); }
    PrepPool& pool;
  };
  bool try_reserve();
  void release();

  const int num_threads_;
  const int max_jobs_;
  std::atomic<int> jobs_{0};
  std::atomic<bool> joined_{false};
  prometheus::Gauge* jobs_gauge_ = nullptr;
  prometheus::Counter* rejected_ = nullptr;
  asio::thread_pool pool_;
};

// The answer when `prep` has no room for another request: 429 (the dispatcher adds
// Retry-After), code "tokenizer_busy".
proto::ApiError prep_pool_full(const PrepPool& prep);

// The number of prep threads `configured` asks for: 0 = automatic (half the cores,
// 2 to 8), so that preparing requests never takes every core from the engines.
int prep_threads(int configured);

}  // namespace sluice::server
