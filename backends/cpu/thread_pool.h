#pragma once
// A fixed pool of compute threads for the CPU backend's kernels.
//
// ThreadPool owns num_threads - 1 worker threads; the thread that calls
// parallel_for computes shares too. parallel_for is called by one thread
// at a time (the backend's user, the engine thread of a model) and returns when
// every share is done. Shares are contiguous ranges whose bounds depend only on n
// and the thread count; kernels must make each output's math independent of
// those bounds (batch invariance), so the split is a matter of speed only.
//
// Between ops a forward pass leaves the workers idle for microseconds, so they
// spin (with a pause hint) for kSpin before sleeping on the job word; the caller
// spins as long on the shares it waits for, then yields its core, and sleeps after
// kCallerSleep until the last one ends.
// Any thread of the job claims any share not yet taken (the caller too, once its
// first is done), so a worker the OS has not scheduled does not hold the step up:
// on a machine shared with other busy processes the caller computes what the
// workers cannot, instead of spinning on them for whole scheduler time slices.
// Which thread runs a share changes nothing in the result (its bounds do not
// depend on it). One parallel_for is one barrier, and it allocates nothing.
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
  // The caller spins kSpin on shares still running, then yields its core until
  // kCallerSleep, then sleeps.
  static constexpr std::chrono::microseconds kCallerSleep{2000};

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
  void worker_loop();
  // Waits until the job word differs from `seen` and returns the new word.
  uint64_t wait_for_job(uint64_t seen);
  // Runs shares of `job` (a job word) until none is left unclaimed.
  void run_claimed_shares(uint64_t job);
  // The caller's wait for every share of a job of num_shares to finish.
  void wait_for_shares(int num_shares);

  int num_threads_;
  std::vector<std::thread> workers_;

  // The current job: written by the caller before it publishes job_, read by the
  // threads that claim one of its shares (the caller waits for them, so it stays put).
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  // (job counter << 16) | number of shares: one store per job; waking workers see it.
  std::atomic<uint64_t> job_{0};
  // (job counter << 16) | next unclaimed share: a thread that read an earlier job's
  // word fails to claim, so it never runs a later job's share with stale bounds.
  std::atomic<uint64_t> claim_{0};
  std::atomic<int> done_{0};              // shares of the current job finished
  std::atomic<bool> caller_sleeping_{false};  // the caller is blocked in done_.wait
  std::atomic<int> sleepers_{0};          // workers blocked in job_.wait
  std::atomic<bool> stopping_{false};
};

}  // namespace sluice::backends::cpu
