// RequestStream: bounded deltas, finishes always delivered, edge-triggered wake-up,
// cancel flag, and one producer / one consumer on two threads.
#include <doctest/doctest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "engine/request_stream.h"

namespace sluice::engine::unit_engine_test_request_stream {
namespace {

ChoiceDelta delta(int32_t token) { return ChoiceDelta{.index = 0, .text = "t", .token_ids = {token}, .logprobs = {}, .prompt_logprobs = {}}; }

ChoiceFinish finish(int32_t index, FinishReason reason = FinishReason::stop) {
  ChoiceFinish f;
  f.index = index;
  f.reason = reason;
  return f;
}

TEST_CASE("a full stream refuses deltas but always takes the finish") {
  RequestStream stream("r", 1, 2);
  CHECK(stream.push_delta(delta(1)));
  CHECK(stream.push_delta(delta(2)));
  CHECK_FALSE(stream.push_delta(delta(3)));
  stream.push_finish(finish(0, FinishReason::abort));
  CHECK(stream.is_finished());
  CHECK_FALSE(stream.is_done());
  std::vector<RequestEvent> events;
  CHECK(stream.poll(events) == 3);
  CHECK(std::get<ChoiceDelta>(events[0]).token_ids == std::vector<int32_t>{1});
  CHECK(std::get<ChoiceFinish>(events[2]).finish_reason() == "abort");
  CHECK(stream.is_done());
  // Popping made room again.
  CHECK(stream.push_delta(delta(4)));
}

TEST_CASE("the wake-up fires when events arrive on an empty queue only") {
  RequestStream stream("r", 2, 8);
  int wakes = 0;
  stream.set_wakeup([&] { ++wakes; });
  CHECK(wakes == 0);
  stream.push_delta(delta(1));
  stream.push_delta(delta(2));
  CHECK(wakes == 1);
  CHECK(stream.try_pop().has_value());
  stream.push_delta(delta(3));  // queue not empty: no second wake
  CHECK(wakes == 1);
  CHECK(stream.try_pop().has_value());
  CHECK(stream.try_pop().has_value());
  CHECK_FALSE(stream.try_pop().has_value());
  stream.push_finish(finish(1));
  CHECK(wakes == 2);
  CHECK_FALSE(stream.is_finished());  // one of two choices
}

TEST_CASE("registering a wake-up with events waiting fires it at once") {
  RequestStream stream("r", 1, 8);
  stream.push_delta(delta(1));
  int wakes = 0;
  stream.set_wakeup([&] { ++wakes; });
  CHECK(wakes == 1);
}

TEST_CASE("cancel is a flag the producer reads") {
  RequestStream stream("r", 1, 8);
  CHECK_FALSE(stream.is_cancelled());
  stream.cancel();
  CHECK(stream.is_cancelled());
}

TEST_CASE("a producer and a consumer thread pass every event in order") {
  RequestStream stream("r", 1, 16);
  constexpr int kCount = 2000;
  std::atomic<int> wakes{0};
  stream.set_wakeup([&] { wakes.fetch_add(1); });
  std::thread producer([&] {
    for (int i = 0; i < kCount; ++i)
      while (!stream.push_delta(delta(i))) std::this_thread::yield();  // a test producer may retry
    stream.push_finish(finish(0, FinishReason::length));
  });
  std::vector<int32_t> seen;
  bool finished = false;
  while (!finished) {
    stream.wait(std::chrono::milliseconds(100));
    while (auto event = stream.try_pop()) {
      if (auto* d = std::get_if<ChoiceDelta>(&*event)) seen.push_back(d->token_ids.front());
      else finished = true;
    }
  }
  producer.join();
  REQUIRE(seen.size() == kCount);
  for (int i = 0; i < kCount; ++i) CHECK(seen[static_cast<size_t>(i)] == i);
  CHECK(wakes.load() >= 1);
  CHECK(stream.is_done());
}

}  // namespace
}  // namespace sluice::engine
