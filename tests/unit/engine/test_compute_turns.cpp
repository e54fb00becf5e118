#include "engine/compute_turns.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <vector>

namespace sluice::engine {
namespace {

TEST_CASE("compute turns: one holder at a time, and every thread gets its turns") {
  ComputeTurns turns(true);
  std::atomic<int> inside{0};
  std::atomic<int> max_inside{0};
  std::vector<int> served(3, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        ComputeTurns::Turn turn(turns);
        const int now = ++inside;
        int seen = max_inside.load();
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        ++served[static_cast<size_t>(t)];
        std::this_thread::yield();
        --inside;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(max_inside.load() == 1);
  CHECK(served == std::vector<int>{300, 300, 300});
}

TEST_CASE("compute turns: in arrival order") {
  ComputeTurns turns(true);
  std::vector<int> order;
  std::optional<ComputeTurns::Turn> first;
  first.emplace(turns);  // held while the others queue up one by one
  std::vector<std::thread> threads;
  std::atomic<int> started{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ++started;
      ComputeTurns::Turn turn(turns);
      order.push_back(t);
    });
    // Each thread takes its ticket before the next starts.
    while (started.load() < t + 1) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  first.reset();
  for (auto& thread : threads) thread.join();
  CHECK(order == std::vector<int>{0, 1, 2, 3});
}

// A second turn while the first is held: granted at once only when disabled.
bool second_turn_within(ComputeTurns& turns, std::chrono::milliseconds limit) {
  std::optional<ComputeTurns::Turn> held;
  held.emplace(turns);
  auto second = std::async(std::launch::async, [&] { ComputeTurns::Turn turn(turns); });
  const bool granted = second.wait_for(limit) == std::future_status::ready;
  held.reset();  // lets an enabled second turn through, so the future can end
  second.wait();
  return granted;
}

TEST_CASE("compute turns: disabled turns never wait, enabled ones do") {
  ComputeTurns disabled(false);
  CHECK(second_turn_within(disabled, std::chrono::seconds(5)));
  ComputeTurns enabled(true);
  CHECK_FALSE(second_turn_within(enabled, std::chrono::milliseconds(100)));
}

}  // namespace
}  // namespace sluice::engine
