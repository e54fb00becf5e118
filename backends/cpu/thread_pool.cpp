#include "backends/cpu/thread_pool.h"

#include <algorithm>

namespace sluice::backends::cpu {
namespace {

inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void run_share(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int share, int num_shares) {
  const int64_t begin = n * share / num_shares;
  const int64_t end = n * (share + 1) / num_shares;
  if (begin < end) fn(begin, end);
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = std::min(num_threads, kMaxThreads);
  workers_.reserve(static_cast<size_t>(num_threads_ - 1));
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  job_.fetch_add(uint64_t{1} << 16);
  job_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int num_shares = static_cast<int>(std::min<int64_t>(n, num_threads_));
  if (num_shares == 1) {
    fn(0, n);
    return;
  }
  fn_ = &fn;
  n_ = n;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t counter = (job_.load(std::memory_order_relaxed) >> 16) + 1;
  claim_.store(counter << 16, std::memory_order_relaxed);
  const uint64_t job = (counter << 16) | static_cast<uint64_t>(num_shares);
  job_.store(job);  // seq_cst: publishes the fields above, and comes before reading sleepers_
  if (sleepers_.load() > 0) job_.notify_all();
  run_claimed_shares(job);
  wait_for_shares(num_shares);
}

void ThreadPool::run_claimed_shares(uint64_t job) {
  const uint64_t counter = job >> 16;
  const int num_shares = static_cast<int>(job & 0xFFFF);
  uint64_t claim = claim_.load(std::memory_order_acquire);
  for (;;) {
    const int share = static_cast<int>(claim & 0xFFFF);
    if ((claim >> 16) != counter || share >= num_shares) return;
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel)) continue;
    run_share(*fn_, n_, share, num_shares);
    // seq_cst, then reading caller_sleeping_: see wait_for_shares.
    if (done_.fetch_add(1) + 1 == num_shares && caller_sleeping_.load()) done_.notify_one();
    claim = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::wait_for_shares(int num_shares) {
  // Spin for kSpin, then yield the core to whatever else is runnable until
  // kCallerSleep (on an idle machine yield returns at once: still a spin, with no
  // wake-up latency, which sleeping early was measured to cost: 20% of a decode
  // step), and only then sleep until the last share ends.
  const auto start = std::chrono::steady_clock::now();
  for (int spins = 0;; ++spins) {
    if (done_.load(std::memory_order_acquire) == num_shares) return;
    if (spins % 64 != 63) {
      pause();
      continue;
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited < kSpin) continue;
    if (waited < kCallerSleep) {
      std::this_thread::yield();
      continue;
    }
    // Marked sleeping before reading done_ (both seq_cst): the thread that ends
    // the last share either sees the mark and notifies, or its count is read here.
    caller_sleeping_.store(true);
    const int done = done_.load();
    if (done != num_shares) done_.wait(done);
    caller_sleeping_.store(false);
  }
}

uint64_t ThreadPool::wait_for_job(uint64_t seen) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int spins = 0;; ++spins) {
    const uint64_t job = job_.load(std::memory_order_acquire);
    if (job != seen) return job;
    pause();
    if (spins % 64 == 63 && std::chrono::steady_clock::now() > deadline) {
      // Registered as a sleeper before waiting: parallel_for either sees the
      // registration and notifies, or wait() sees the new job word and returns.
      sleepers_.fetch_add(1);
      job_.wait(seen);
      sleepers_.fetch_sub(1);
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    seen = wait_for_job(seen);
    if (stopping_.load()) return;
    run_claimed_shares(seen);
  }
}

}  // namespace sluice::backends::cpu
