// ThreadPool: every job covers [0, n) with the fixed share bounds n*s/k, once each,
// whichever thread claims a share; the caller that sleeps on slow shares is woken
// when the last one ends; threads that wake late for an old job never run a share
// of a newer one.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "backends/cpu/thread_pool.h"

namespace sluice::backends::cpu::unit_backends_cpu_test_thread_pool {
namespace {

using Range = std::pair<int64_t, int64_t>;

// The ranges one parallel_for passed to fn, sorted.
std::set<Range> ranges_of(ThreadPool& pool, int64_t n, std::chrono::microseconds share_time = {}) {
  std::mutex mutex;
  std::set<Range> ranges;
  pool.parallel_for(n, [&](int64_t begin, int64_t end) {
    if (share_time.count() > 0) std::this_thread::sleep_for(share_time);
    std::lock_guard lock(mutex);
    ranges.insert({begin, end});
  });
  return ranges;
}

std::set<Range> expected_ranges(int64_t n, int threads) {
  const int64_t shares = std::min<int64_t>(n, threads);
  std::set<Range> out;
  for (int64_t s = 0; s < shares; ++s) out.insert({n * s / shares, n * (s + 1) / shares});
  return out;
}

TEST_CASE("thread pool: each job runs every share once with fixed bounds, job after job") {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int job = 0; job < 1000; ++job) {
      const int64_t n = 1 + job % 17;
      CAPTURE(threads);
      CAPTURE(job);
      const auto got = ranges_of(pool, n);
      REQUIRE(got == expected_ranges(n, threads));
    }
  }
}

TEST_CASE("thread pool: a caller that sleeps on slow shares is woken when they end") {
  // Shares longer than kCallerSleep put the caller to sleep on the done count.
  static_assert(std::chrono::microseconds(4000) > ThreadPool::kCallerSleep);
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int job = 0; job < 30; ++job) {
    pool.parallel_for(3, [&](int64_t begin, int64_t end) {
      std::this_thread::sleep_for(std::chrono::microseconds(4000));
      for (int64_t i = begin; i < end; ++i) sum.fetch_add(i + 1);
    });
    // Idle workers fall asleep between jobs too, and must be woken by the next one.
    if (job % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  CHECK(sum.load() == 30 * (1 + 2 + 3));
  CHECK(ranges_of(pool, 7, std::chrono::microseconds(4000)) == expected_ranges(7, 3));
}

}  // namespace
}  // namespace sluice::backends::cpu
