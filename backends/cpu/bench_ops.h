#pragma once
// Shared pieces of sluice_bench_ops (a micro-benchmark, not part of the backend).
#include <chrono>
#include <functional>

#include "backends/backend.h"

namespace sluice::backends::bench {

// Seconds per call of `call`, after one warm-up call, over at least 0.3 s.
inline double seconds_per_call(const std::function<void()>& call) {
  call();
  int iters = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    call();
    ++iters;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } while (elapsed < 0.3);
  return elapsed / iters;
}

// The codec decoder's convolutions at their real shapes (bench_signal.cpp).
void bench_signal_ops(Backend& backend);

// One row through a decoder's worth of distinct weights (bench_stream.cpp).
void bench_weight_stream(Backend& backend);

}  // namespace sluice::backends::bench
