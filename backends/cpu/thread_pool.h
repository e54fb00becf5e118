#pragma once
// A fixed pool of compute threads for the CPU backend's kernels.
//
// ThreadPool owns num_threads - 1 worker threads; the thread that calls
// parallel_for does the first share itself. parallel_for is called by one thread
// at a time (the backend's user, the engine thread of a model) and returns when
// every share is done. Shares are contiguous ranges whose bounds depend only on n
// and the thread count; kernels must make each output's math independent of
// those bounds (batch invariance), so the split is a matter of speed only.
//
// Between ops a forward pass leaves the workers idle for microseconds, so they
// spin (with a pause hint) for kSpin before sleeping on the job counter; the
// caller spins on the pending count. One parallel_for is one barrier, and it
// allocates nothing.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace sluice::backends::cpu {

class ThreadPool {
 public:
  // How long an idle worker spins before it sleeps.
  static constexpr std::chrono::microseconds kSpin{200};

  // num_threads <= 0: one per hardware thread; at most kMaxThreads.
  static constexpr int kMaxThreads = 4096;
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls fn(begin, end) on disjoint contiguous ranges covering [0, n), at most
  // one range per thread, and waits for all of them. fn must not throw.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);
  // Waits until the job word differs from `seen` and returns the new word.
  uint64_t wait_for_job(uint64_t seen);

  int num_threads_;
  std::vector<std::thread> workers_;

  // The current job: written by the caller before it publishes job_, read by the
  // workers that take part in it (the caller waits for them, so it stays put).
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  // (job counter << 16) | number of shares: one store per job, so a worker that
  // sits a job out (index >= shares) never mistakes a later job's fields for it.
  std::atomic<uint64_t> job_{0};
  std::atomic<int> pending_{0};          // worker shares not finished yet
  std::atomic<int> sleepers_{0};         // workers blocked in job_.wait
  std::atomic<bool> stopping_{false};
};

}  // namespace sluice::backends::cpu
