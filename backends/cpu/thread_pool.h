#pragma once
// A fixed pool of compute threads for the CPU backend's kernels.
//
// ThreadPool owns num_threads - 1 worker threads; the thread that calls
// parallel_for does the first share itself. parallel_for is called by one thread
// at a time (the backend's user, the engine thread of a model) and returns when
// every share is done. Shares are contiguous ranges whose bounds depend only on n
// and the thread count; kernels must make each output's math independent of
// those bounds (batch invariance), so the split is a matter of speed only.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice::backends::cpu {

class ThreadPool {
 public:
  // num_threads <= 0: one per hardware thread.
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
  static void run_share(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int share,
                        int num_shares);

  int num_threads_;
  std::vector<std::thread> workers_;

  std::mutex mutex_;
  std::condition_variable start_cv_;
  std::condition_variable done_cv_;
  uint64_t generation_ = 0;  // bumped per parallel_for; workers run once per bump
  int num_shares_ = 0;       // shares of the current job (workers with index >= skip it)
  int num_pending_ = 0;      // worker shares not finished yet
  int64_t n_ = 0;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  bool stopping_ = false;
};

}  // namespace sluice::backends::cpu
