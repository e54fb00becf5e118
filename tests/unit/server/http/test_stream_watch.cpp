// StreamWatch on a real io_context: engine wake-ups end a wait, a client that leaves
// is told apart from one that pipelines its next request, finish() hands the socket
// back, and a wake-up that outlives the watch touches nothing.
//
// Wake-ups are checked with io_context::poll(), which only runs handlers that are
// ready: a wait that ended there was ended by the wake-up, not by the one-second
// safety net (its timer cannot have fired in the microseconds in between).
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/core/buffers_to_string.hpp>

#include <thread>

#include "server/http/stream_watch.h"
#include "tests/unit/server/http/loopback_pair.h"

namespace unit_server_http_test_stream_watch {

using namespace sluice::server;
using sluice::engine::ChoiceDelta;
using sluice::engine::RequestStream;

namespace {

// A coroutine run to its end on the strand: `done` says whether it got there.
struct Spawned {
  bool done = false;
};

template <class Body>
void spawn(asio::any_io_executor strand, Spawned& spawned, Body body) {
  asio::co_spawn(
      strand,
      [&spawned, body]() -> asio::awaitable<void> {
        co_await body();
        spawned.done = true;
      },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
}

// Runs the handlers that are ready, none that must wait; returns how many ran. (An
// io_context that ran out of work stops: restarted first.)
size_t poll(asio::io_context& ioc) {
  ioc.restart();
  return ioc.poll();
}

// Runs ready handlers only, a bounded number of rounds, until `spawned` is done.
void poll_until_done(asio::io_context& ioc, const Spawned& spawned) {
  for (int i = 0; i < 100 && !spawned.done; ++i) poll(ioc);
}

// Runs handlers (blocking for the next one) until `spawned` is done; a failing run
// gives up after a minute.
void run_until_done(asio::io_context& ioc, const Spawned& spawned) {
  ioc.restart();
  const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!spawned.done && !ioc.stopped() && std::chrono::steady_clock::now() < until) ioc.run_one_until(until);
}

// The engine side: a push from another thread, as the engine thread makes it.
void push_from_engine_thread(RequestStream& stream) {
  std::thread engine([&] {
    ChoiceDelta delta;
    delta.text = "x";
    CHECK(stream.push_delta(std::move(delta)));
  });
  engine.join();
}

}  // namespace

TEST_CASE("stream watch: an engine wake-up of any attached stream ends wait() at once") {
  asio::io_context ioc;
  auto strand = asio::make_strand(ioc);
  RequestStream first("a", 1, 8);
  RequestStream second("b", 1, 8);
  StreamWatch watch(strand, nullptr);
  watch.attach(first);
  watch.attach(second);

  Spawned waiter;
  spawn(strand, waiter, [&]() -> asio::awaitable<void> { co_await watch.wait(); });
  poll(ioc);
  REQUIRE_FALSE(waiter.done);  // nothing happened yet: it waits
  push_from_engine_thread(second);
  poll_until_done(ioc, waiter);
  CHECK(waiter.done);
  CHECK_FALSE(watch.is_client_gone());
  CHECK(second.try_pop().has_value());
}

TEST_CASE("stream watch: a wake-up before wait() is not lost") {
  asio::io_context ioc;
  auto strand = asio::make_strand(ioc);
  RequestStream stream("a", 1, 8);
  StreamWatch watch(strand, nullptr);
  watch.attach(stream);
  push_from_engine_thread(stream);
  poll(ioc);  // the wake-up lands while no one waits
  Spawned waiter;
  spawn(strand, waiter, [&]() -> asio::awaitable<void> { co_await watch.wait(); });
  poll_until_done(ioc, waiter);
  CHECK(waiter.done);
  // Told once: the next wait() waits again.
  Spawned again;
  spawn(strand, again, [&]() -> asio::awaitable<void> { co_await watch.wait(); });
  poll(ioc);
  CHECK_FALSE(again.done);
  REQUIRE(stream.try_pop().has_value());
  push_from_engine_thread(stream);  // the queue was empty again: a new wake-up
  poll_until_done(ioc, again);
  CHECK(again.done);
}

TEST_CASE("stream watch: events already waiting at attach() wake the watch") {
  asio::io_context ioc;
  auto strand = asio::make_strand(ioc);
  RequestStream stream("a", 1, 8);
  push_from_engine_thread(stream);
  StreamWatch watch(strand, nullptr);
  watch.attach(stream);
  Spawned waiter;
  spawn(strand, waiter, [&]() -> asio::awaitable<void> { co_await watch.wait(); });
  poll_until_done(ioc, waiter);
  CHECK(waiter.done);
}

TEST_CASE("stream watch: without news, wait() returns after its safety net") {
  asio::io_context ioc;
  auto strand = asio::make_strand(ioc);
  StreamWatch watch(strand, nullptr);
  Spawned waiter;
  spawn(strand, waiter, [&]() -> asio::awaitable<void> { co_await watch.wait(); });
  poll(ioc);
  REQUIRE_FALSE(waiter.done);
  run_until_done(ioc, waiter);  // the timer's second passes
  CHECK(waiter.done);
  CHECK_FALSE(watch.is_client_gone());  // no socket: the client never counts as gone
}

TEST_CASE("stream watch: a client that closes its connection is gone, and wait() ends") {
  testing::LoopbackPair pair;
  ClientLink link{pair.server, pair.buffer};
  StreamWatch watch(pair.strand, &link);
  pair.client.close();
  Spawned waiter;
  spawn(pair.strand, waiter, [&]() -> asio::awaitable<void> { co_await watch.wait(); });
  run_until_done(pair.ioc, waiter);
  CHECK(waiter.done);
  CHECK(watch.is_client_gone());
  Spawned finished;
  spawn(pair.strand, finished, [&]() -> asio::awaitable<void> { co_await watch.finish(); });
  run_until_done(pair.ioc, finished);
  CHECK(finished.done);
}

TEST_CASE("stream watch: a reset connection is gone too") {
  testing::LoopbackPair pair;
  ClientLink link{pair.server, pair.buffer};
  StreamWatch watch(pair.strand, &link);
  pair.client_reset();
  Spawned waiter;
  spawn(pair.strand, waiter, [&]() -> asio::awaitable<void> { co_await watch.wait(); });
  run_until_done(pair.ioc, waiter);
  CHECK(waiter.done);
  CHECK(watch.is_client_gone());
}

TEST_CASE("stream watch: a pipelined next request is not a client leaving; its bytes stay for the session") {
  testing::LoopbackPair pair;
  ClientLink link{pair.server, pair.buffer};
  StreamWatch watch(pair.strand, &link);
  const std::string next = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";
  pair.client_write(next);
  Spawned waiter;
  spawn(pair.strand, waiter, [&]() -> asio::awaitable<void> { co_await watch.wait(); });
  run_until_done(pair.ioc, waiter);
  CHECK(waiter.done);
  CHECK_FALSE(watch.is_client_gone());
  Spawned finished;
  spawn(pair.strand, finished, [&]() -> asio::awaitable<void> { co_await watch.finish(); });
  run_until_done(pair.ioc, finished);
  REQUIRE(finished.done);
  CHECK(beast::buffers_to_string(pair.buffer.data()) == next);
}

TEST_CASE("stream watch: finish() stops the socket read and hands the socket back unharmed") {
  testing::LoopbackPair pair;
  ClientLink link{pair.server, pair.buffer};
  RequestStream stream("a", 1, 8);
  auto watch = std::make_unique<StreamWatch>(pair.strand, &link);
  watch->attach(stream);
  Spawned finished;
  spawn(pair.strand, finished, [&]() -> asio::awaitable<void> { co_await watch->finish(); });
  run_until_done(pair.ioc, finished);
  REQUIRE(finished.done);
  CHECK_FALSE(watch->is_client_gone());  // a cancelled read is not a client leaving
  CHECK(pair.buffer.size() == 0);
  // The session reads the client's next bytes itself: the watch's read is over.
  pair.client_write("ping");
  char got[4] = {};
  asio::read(pair.server.socket(), asio::buffer(got));
  CHECK(std::string(got, 4) == "ping");
  // The streams were detached: a later push posts nothing.
  watch.reset();
  push_from_engine_thread(stream);
  CHECK(poll(pair.ioc) == 0);
}

TEST_CASE("stream watch: a wake-up that arrives after the watch ended touches nothing") {
  asio::io_context ioc;
  auto strand = asio::make_strand(ioc);
  RequestStream stream("a", 1, 8);
  {
    StreamWatch watch(strand, nullptr);
    watch.attach(stream);
    push_from_engine_thread(stream);  // the wake-up is posted, not yet run
  }
  CHECK(poll(ioc) > 0);  // it runs against a watch that is gone (ASan: no use after free)
  REQUIRE(stream.try_pop().has_value());
  push_from_engine_thread(stream);  // the destructor detached it: nothing posted
  CHECK(poll(ioc) == 0);
}
}  // namespace unit_server_http_test_stream_watch
