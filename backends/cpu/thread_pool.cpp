#include "backends/cpu/thread_pool.h"

#include <algorithm>

namespace sluice::backends::cpu {

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = num_threads;
  workers_.reserve(static_cast<size_t>(num_threads_ - 1));
  for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::run_share(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int share,
                           int num_shares) {
  const int64_t begin = n * share / num_shares;
  const int64_t end = n * (share + 1) / num_shares;
  if (begin < end) fn(begin, end);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int num_shares = static_cast<int>(std::min<int64_t>(n, num_threads_));
  if (num_shares == 1) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    n_ = n;
    num_shares_ = num_shares;
    num_pending_ = num_shares - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  run_share(fn, n, 0, num_shares);
  std::unique_lock lock(mutex_);
  done_cv_.wait(lock, [this] { return num_pending_ == 0; });
  fn_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* fn;
    int64_t n;
    int num_shares;
    {
      std::unique_lock lock(mutex_);
      start_cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (index >= num_shares_) continue;  // this job has fewer shares than threads
      fn = fn_;
      n = n_;
      num_shares = num_shares_;
    }
    run_share(*fn, n, index, num_shares);
    bool last;
    {
      std::lock_guard lock(mutex_);
      last = --num_pending_ == 0;
    }
    if (last) done_cv_.notify_one();
  }
}

}  // namespace sluice::backends::cpu
