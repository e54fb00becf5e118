#pragma once
// Checks of signal_ops_cases.h's cases shared by the CPU backend's signal-op tests
// (test_signal_ops.cpp for F32 weights, test_signal_ops_int16.cpp,
// test_signal_ops_panels.cpp).
#include <doctest/doctest.h>

#include <memory>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/quant/cpu_features.h"
#include "tests/unit/backends/cpu/cpu_test_util.h"
#include "tests/unit/backends/signal_ops_cases.h"

namespace sluice::backends::test {

// One CPU backend per kernel path this CPU runs, scalar first.
inline std::vector<std::unique_ptr<Backend>> backends_of_every_path(int num_threads) {
  std::vector<std::unique_ptr<Backend>> backends;
  for (cpu::KernelPath path : cpu::runnable_kernel_paths())
    backends.push_back(std::make_unique<cpu::CpuBackend>(num_threads, path));
  return backends;
}

// Every path gives the scalar path's bits (all CPUs decode alike), and chunked
// streaming equals one whole call bit for bit on every path and on one thread;
// with `strided`, rows with padding between them give the same values too.
inline void check_paths_and_streaming(const std::vector<SignalCase>& cases, std::mt19937& rng, bool strided) {
  auto backends = backends_of_every_path(2);
  backends.push_back(std::make_unique<cpu::CpuBackend>(1, cpu::active_kernel_path()));
  const int64_t steps = 37;
  for (const SignalCase& c : cases) {
    CAPTURE(c.describe());
    const std::vector<float> x = random_signal_input(c, steps, rng);
    const std::vector<float> whole_scalar = run_signal(*backends.front(), c, x, steps);
    for (const auto& backend : backends) {
      CAPTURE(backend->kernel_path());
      const std::vector<float> whole = run_signal(*backend, c, x, steps);
      CHECK(bits_equal(whole, whole_scalar));
      CHECK(bits_equal(run_signal_chunked(*backend, c, x, steps, {1}), whole));
      CHECK(bits_equal(run_signal_chunked(*backend, c, x, steps, {4, 7, 1, 3, 5}), whole));
      if (strided) CHECK(bits_equal(run_signal(*backend, c, x, steps, 3), whole));
    }
  }
}

}  // namespace sluice::backends::test
