#include "engine/compute_turns.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <vector>

namespace sluice::engine::unit_engine_test_compute_turns {
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

// Waits until `turns` has handed out `count` tickets: a thread that asked for a turn
// has its place in line. Bounded; false when it never happened.
bool wait_for_tickets(const ComputeTurns& turns, uint64_t count) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (turns.num_tickets() < count) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST_CASE("compute turns: an urgent turn goes ahead of the waiting ones, after earlier urgent ones") {
  ComputeTurns turns(true);
  std::vector<int> order;
  std::optional<ComputeTurns::Turn> first;
  first.emplace(turns);
  std::vector<std::thread> threads;
  // Queued one by one: normal 0, normal 1, urgent 2, urgent 3, normal 4.
  const bool urgent[] = {false, false, true, true, false};
  for (int t = 0; t < 5; ++t) {
    threads.emplace_back([&, t] {
      ComputeTurns::Turn turn(turns, urgent[t]);
      order.push_back(t);  // one holder at a time: no lock needed
    });
    REQUIRE(wait_for_tickets(turns, static_cast<uint64_t>(t) + 2));
  }
  first.reset();
  for (auto& thread : threads) thread.join();
  CHECK(order == std::vector<int>{2, 3, 0, 1, 4});
}

TEST_CASE("compute turns: a deferred turn keeps its place in line; unwaited, it gives the place up") {
  ComputeTurns turns(true);
  std::vector<int> order;
  std::optional<ComputeTurns::Turn> first;
  first.emplace(turns);
  std::optional<ComputeTurns::Turn> deferred;
  deferred.emplace(turns, false, std::defer_lock);  // in line second, not blocked
  std::optional<ComputeTurns::Turn> given_up;
  given_up.emplace(turns, false, std::defer_lock);  // third, never waited for
  std::thread later([&] {
    ComputeTurns::Turn turn(turns);
    order.push_back(2);
  });
  REQUIRE(wait_for_tickets(turns, 4));
  first.reset();
  deferred->wait();
  order.push_back(1);
  deferred.reset();
  given_up.reset();  // leaves the line: the thread behind it is served
  later.join();
  CHECK(order == std::vector<int>{1, 2});
}

TEST_CASE("compute turns: in arrival order") {
  ComputeTurns turns(true);
  std::vector<int> order;
  std::optional<ComputeTurns::Turn> first;
  first.emplace(turns);  // held while the others queue up one by one
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ComputeTurns::Turn turn(turns);
      order.push_back(t);  // one holder at a time: no lock needed
    });
    // Thread t is in line (ticket t + 1) before thread t + 1 starts.
    REQUIRE(wait_for_tickets(turns, static_cast<uint64_t>(t) + 2));
  }
  first.reset();
  for (auto& thread : threads) thread.join();
  CHECK(order == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("compute turns: disabled turns never wait, enabled ones do") {
  {
    ComputeTurns disabled(false);
    ComputeTurns::Turn held(disabled);
    auto second = std::async(std::launch::async, [&] { ComputeTurns::Turn turn(disabled); });
    // Granted while the first is held; the limit only bounds a failing run.
    CHECK(second.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
    CHECK(disabled.num_tickets() == 0);
  }
  ComputeTurns enabled(true);
  std::optional<ComputeTurns::Turn> held;
  held.emplace(enabled);
  std::atomic<bool> granted{false};
  auto second = std::async(std::launch::async, [&] {
    ComputeTurns::Turn turn(enabled);
    granted = true;
  });
  REQUIRE(wait_for_tickets(enabled, 2));  // the second is in line
  // It stays there while the first is held: however long we look, it is not granted.
  CHECK(second.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
  CHECK_FALSE(granted.load());
  held.reset();
  CHECK(second.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(granted.load());
}

}  // namespace
}  // namespace sluice::engine
