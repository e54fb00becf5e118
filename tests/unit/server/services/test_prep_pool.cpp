// PrepPool: the work runs on a pool thread (never the caller's I/O thread), the caller
// resumes on its own executor with the result or the exception, and a full pool
// refuses at once.
#include "server/services/prep_pool.h"

#include <doctest/doctest.h>

#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include <future>
#include <stdexcept>
#include <thread>

namespace sluice::server::unit_server_services_test_prep_pool {
namespace {

// Runs `coroutine` to completion on a fresh io_context driven by this thread.
template <class Coroutine>
void run_on_io_thread(Coroutine coroutine) {
  asio::io_context io;
  std::exception_ptr failure;
  asio::co_spawn(io, std::move(coroutine), [&](std::exception_ptr e) { failure = e; });
  io.run();
  if (failure) std::rethrow_exception(failure);
}

TEST_CASE("the work runs on a pool thread and the caller resumes on its own") {
  PrepPool pool(2, 4);
  const auto io_thread = std::this_thread::get_id();
  std::thread::id work_thread, resumed_thread;
  std::optional<int> result;
  run_on_io_thread([&]() -> asio::awaitable<void> {
    result = co_await pool.run([&] {
      work_thread = std::this_thread::get_id();
      return 42;
    });
    resumed_thread = std::this_thread::get_id();
  });
  REQUIRE(result.has_value());
  CHECK(*result == 42);
  CHECK(work_thread != io_thread);
  CHECK(resumed_thread == io_thread);
  CHECK(pool.jobs() == 0);
}

TEST_CASE("an exception in the work reaches the caller and frees the slot") {
  PrepPool pool(1, 1);
  bool caught = false;
  run_on_io_thread([&]() -> asio::awaitable<void> {
    try {
      co_await pool.run([]() -> int { throw std::runtime_error("template says no"); });
    } catch (const std::runtime_error& e) {
      caught = std::string(e.what()) == "template says no";
    }
  });
  CHECK(caught);
  CHECK(pool.jobs() == 0);
}

TEST_CASE("a full pool refuses at once, and takes work again once a slot frees") {
  PrepPool pool(1, 2);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> first_started;
  asio::io_context io;
  int finished = 0;
  bool refused = false;
  auto blocked_job = [&]() -> asio::awaitable<void> {
    co_await pool.run([&] {
      released.wait();
      return 0;
    });
    ++finished;
  };
  asio::co_spawn(io, blocked_job(), asio::detached);
  asio::co_spawn(io, blocked_job(), asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // Both slots are held (one job runs, one waits for the only thread).
        auto third = co_await pool.run([] { return 3; });
        refused = !third.has_value();
        CHECK(pool.jobs() == 2);
        release.set_value();
      },
      asio::detached);
  io.run();
  CHECK(refused);
  CHECK(finished == 2);
  CHECK(pool.jobs() == 0);
  std::optional<int> again;
  run_on_io_thread([&]() -> asio::awaitable<void> { again = co_await pool.run([] { return 7; }); });
  CHECK(again == 7);
}

TEST_CASE("the refusal is a 429 naming the queue size") {
  PrepPool pool(1, 5);
  const proto::ApiError error = prep_pool_full(pool);
  CHECK(error.status == 429);
  CHECK(error.code == "tokenizer_busy");
  CHECK(error.message.find("5 requests") != std::string::npos);
}

}  // namespace
}  // namespace sluice::server
