#include "engine/engine_shell.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

// The shell both engines (text and speech) run on, driven with plain items and a
// hand-written loop: the queue limit, ids in flight, aborts, stop and death.
namespace sluice::engine::unit_engine_test_engine_shell {
namespace {

using namespace std::chrono_literals;

struct Item {
  std::string id;
};

SubmitResult push_one(EngineShell<Item>& shell, const std::string& id, int32_t sequences = 1) {
  return shell.push({Item{id}}, {id}, sequences);
}

// Waits (generously) until `done` holds; false on the timeout.
template <class Condition>
bool eventually(Condition done) {
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST_CASE("engine shell: the queue limit counts sequences in the inbox and the scheduler's waiting") {
  EngineShell<Item> shell(4);
  CHECK(push_one(shell, "a", 3).ok());
  CHECK(push_one(shell, "b", 1).ok());
  SubmitResult full = push_one(shell, "c", 1);
  CHECK(full.status == SubmitStatus::queue_full);
  CHECK(full.message == "the request queue is full (4 waiting); retry later");

  // Drained, the inbox's sequences count as waiting until the scheduler says otherwise.
  auto drained = shell.drain();
  REQUIRE(drained.items.size() == 2);
  CHECK(drained.go_on);
  CHECK(push_one(shell, "c", 1).status == SubmitStatus::queue_full);
  shell.set_num_waiting(1);  // three were admitted to run
  CHECK(push_one(shell, "c", 3).ok());
  CHECK(push_one(shell, "d", 1).status == SubmitStatus::queue_full);

  const EngineStats stats = shell.stats();
  CHECK(stats.num_pending == 1);
  CHECK(stats.num_requests_submitted == 3);
  CHECK(stats.num_requests_queue_full == 3);
}

TEST_CASE("engine shell: ids in flight are unique until released, a batch all or nothing") {
  EngineShell<Item> shell(100);
  CHECK(push_one(shell, "a").ok());
  SubmitResult again = push_one(shell, "a");
  CHECK(again.status == SubmitStatus::rejected);
  CHECK(again.param == "request_id");
  CHECK(again.message == "a request with id 'a' is already in flight");

  SubmitResult twice = shell.push({Item{"b"}, Item{"b"}}, {"b", "b"}, 2);
  CHECK(twice.status == SubmitStatus::rejected);
  CHECK(shell.drain().items.size() == 1);  // nothing of the refused batch was queued

  shell.release("a");
  CHECK(push_one(shell, "a").ok());
  shell.count_rejected();
  CHECK(shell.stats().num_requests_rejected == 3);
}

TEST_CASE("engine shell: abort reaches the engine thread only for ids in flight") {
  EngineShell<Item> shell(100);
  CHECK_FALSE(shell.abort("x"));
  REQUIRE(push_one(shell, "x").ok());
  CHECK(shell.abort("x"));
  auto drained = shell.drain();
  REQUIRE(drained.aborts.size() == 1);
  CHECK(drained.aborts[0] == "x");
  CHECK(shell.drain().aborts.empty());
}

TEST_CASE("engine shell: the loop sleeps until there is work, and stop() ends it") {
  EngineShell<Item> shell(100);
  std::atomic<int> num_wakeups{0};
  std::atomic<int> num_items{0};
  shell.start(
      [&] {
        for (;;) {
          auto drained = shell.drain();
          num_items += static_cast<int>(drained.items.size());
          if (!drained.go_on) return;
          shell.wait_for_work();
          ++num_wakeups;
        }
      },
      "stopped: ", [](const std::string&, std::vector<Item>) {});
  // Idle: the loop waits on the condition variable. A loop that spun would count
  // thousands of wake-ups here; allow a few spurious ones.
  std::this_thread::sleep_for(200ms);
  CHECK(num_wakeups.load() <= 2);
  const int before = num_wakeups.load();
  REQUIRE(push_one(shell, "a").ok());
  CHECK(eventually([&] { return num_items.load() == 1; }));
  CHECK(num_wakeups.load() >= before + 1);

  CHECK(shell.stop());
  CHECK(shell.stop());  // idempotent
  CHECK(shell.is_stopping());
  SubmitResult late = push_one(shell, "b");
  CHECK(late.status == SubmitStatus::shutting_down);
  CHECK(late.message == "the server is shutting down");
  CHECK(late.code.empty());
  CHECK(shell.health(1s).ok);
}

TEST_CASE("engine shell: an exception escaping the loop is a death the engine is told of") {
  EngineShell<Item> shell(100);
  std::promise<std::pair<std::string, size_t>> died;
  std::atomic<bool> go{false};
  REQUIRE(push_one(shell, "queued").ok());
  shell.start(
      [&] {
        while (!go) std::this_thread::yield();
        throw std::runtime_error("kernel fault");
      },
      "the engine thread stopped: ",
      [&](const std::string& reason, std::vector<Item> queued) { died.set_value({reason, queued.size()}); });
  go = true;
  auto future = died.get_future();
  REQUIRE(future.wait_for(60s) == std::future_status::ready);
  const auto [reason, num_queued] = future.get();
  CHECK(reason == "the engine thread stopped: kernel fault");
  CHECK(num_queued == 1);  // handed over to be ended, not dropped

  const EngineHealth health = shell.health(1s);
  CHECK_FALSE(health.ok);
  CHECK(health.status == "dead");
  CHECK(health.reason == reason);
  SubmitResult refused = push_one(shell, "next");
  CHECK(refused.status == SubmitStatus::shutting_down);
  CHECK(refused.code == "engine_dead");
  CHECK(refused.message == reason);
  CHECK(shell.stop());
}

TEST_CASE("engine shell: a step running past the timeout is wedged; stop() without start is false") {
  EngineShell<Item> shell(100);
  shell.begin_step();
  std::this_thread::sleep_for(5ms);
  const EngineHealth wedged = shell.health(1ns);
  CHECK_FALSE(wedged.ok);
  CHECK(wedged.status == "wedged");
  CHECK(shell.health(0ns).ok);  // no timeout: never wedged
  shell.end_step();
  CHECK(shell.health(1ns).ok);

  REQUIRE(push_one(shell, "a").ok());
  CHECK_FALSE(shell.stop());  // never started: the caller ends what was queued
  auto drained = shell.drain();
  CHECK(drained.items.size() == 1);
  CHECK_FALSE(drained.go_on);
}

}  // namespace
}  // namespace sluice::engine
