// StreamPump on a real io_context (no socket): a step runs again after each engine
// wake-up until it reports the answer complete, and pump_streams cancels and aborts
// exactly the requests that have not finished, however the answer ends.
#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "server/api/stream_pump.h"

namespace unit_server_api_test_stream_pump {

using namespace sluice::server;
using sluice::engine::ChoiceDelta;
using sluice::engine::ChoiceFinish;
using sluice::engine::RequestStream;

namespace {

using Streams = std::vector<std::shared_ptr<RequestStream>>;

// Runs `answer` through pump_streams on `ioc` (ready handlers only, bounded rounds);
// returns whether it ended, and the exception it ended with, if any.
struct Outcome {
  bool ended = false;
  std::exception_ptr error;
};

void start(asio::io_context& ioc, Exchange& ex, const Streams& streams, const StreamPump::Abort& abort,
           const StreamPump::Answer& answer, Outcome& outcome) {
  asio::co_spawn(ioc.get_executor(), pump_streams(ex, streams, abort, answer), [&outcome](std::exception_ptr e) {
    outcome.ended = true;
    outcome.error = e;
  });
}

void poll_rounds(asio::io_context& ioc, int rounds) {
  for (int i = 0; i < rounds; ++i) {
    ioc.restart();
    ioc.poll();
  }
}

std::shared_ptr<RequestStream> stream_named(const std::string& id) {
  return std::make_shared<RequestStream>(id, /*num_choices=*/1, /*capacity=*/16);
}

}  // namespace

TEST_CASE("the step runs again at each engine wake-up until it says the answer is complete") {
  asio::io_context ioc;
  const Request request;
  Exchange ex{request, "req-1", {}, {}, nullptr, {}};
  const Streams streams{stream_named("r-0")};
  int steps = 0;
  bool finished_seen = false;
  const StreamPump::Step step = [&]() -> asio::awaitable<bool> {
    ++steps;
    while (auto event = streams[0]->try_pop()) finished_seen |= std::holds_alternative<ChoiceFinish>(*event);
    co_return finished_seen;
  };
  bool complete = false;
  const StreamPump::Answer answer = [&](StreamPump& pump) -> asio::awaitable<void> {
    complete = co_await pump.run(step);
  };
  std::vector<std::string> aborted;
  const StreamPump::Abort abort = [&](const std::string& id) { aborted.push_back(id); };
  Outcome outcome;
  start(ioc, ex, streams, abort, answer, outcome);
  poll_rounds(ioc, 5);
  CHECK(steps == 1);  // nothing sent yet: waiting
  CHECK_FALSE(outcome.ended);

  ChoiceDelta delta;
  delta.text = "a";
  REQUIRE(streams[0]->push_delta(std::move(delta)));
  poll_rounds(ioc, 5);
  CHECK(steps == 2);
  CHECK_FALSE(outcome.ended);

  streams[0]->push_finish(ChoiceFinish{});
  poll_rounds(ioc, 5);
  CHECK(steps == 3);
  REQUIRE(outcome.ended);
  CHECK_FALSE(outcome.error);
  CHECK(complete);
  CHECK(aborted.empty());  // it finished: nothing to cancel
  CHECK_FALSE(streams[0]->is_cancelled());
}

TEST_CASE("an answer that ends early cancels and aborts only the unfinished requests, and its exception is rethrown") {
  asio::io_context ioc;
  const Request request;
  Exchange ex{request, "req-1", {}, {}, nullptr, {}};
  const Streams streams{stream_named("r-0"), stream_named("r-1"), stream_named("r-2")};
  streams[1]->push_finish(ChoiceFinish{});
  std::vector<std::string> aborted;
  const StreamPump::Abort abort = [&](const std::string& id) { aborted.push_back(id); };
  const StreamPump::Answer answer = [](StreamPump&) -> asio::awaitable<void> {
    throw std::runtime_error("write failed");
    co_return;
  };
  Outcome outcome;
  start(ioc, ex, streams, abort, answer, outcome);
  poll_rounds(ioc, 5);
  REQUIRE(outcome.ended);
  CHECK(outcome.error);
  CHECK(aborted == std::vector<std::string>{"r-0", "r-2"});
  CHECK(streams[0]->is_cancelled());
  CHECK_FALSE(streams[1]->is_cancelled());
  CHECK(streams[2]->is_cancelled());
}

TEST_CASE("without an Abort (the speech engine) the unfinished stream is still cancelled") {
  asio::io_context ioc;
  const Request request;
  Exchange ex{request, "req-1", {}, {}, nullptr, {}};
  const Streams streams{stream_named("speech-0")};
  const StreamPump::Abort no_abort;
  const StreamPump::Answer answer = [](StreamPump&) -> asio::awaitable<void> { co_return; };
  Outcome outcome;
  start(ioc, ex, streams, no_abort, answer, outcome);
  poll_rounds(ioc, 5);
  REQUIRE(outcome.ended);
  CHECK_FALSE(outcome.error);
  CHECK(streams[0]->is_cancelled());
}
}  // namespace unit_server_api_test_stream_pump
