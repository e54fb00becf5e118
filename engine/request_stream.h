#pragma once
// The event channel of one request: the engine thread pushes, one consumer (the
// HTTP session) pops. Thread-safe; the producer side never blocks.
//
// Bounded: at most `capacity` deltas wait in it. When a slow reader lets it fill,
// push_delta() fails and the engine aborts the request instead of waiting; finishes
// always fit (one per choice), so every choice's last event is delivered.
//
// Wake-up: the callback runs on the engine thread after a push that found the queue
// empty (edge-triggered), outside the lock. After a wake the consumer drains with
// poll()/try_pop() until empty; it is never told twice about the same events. The
// callback must be quick and must not block (the server posts to its strand).
//
// Cancel: the consumer calls cancel() on client disconnect; the engine reads the flag
// at its next step, aborts the request and frees its KV blocks.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"

namespace sluice::engine {

class RequestStream {
 public:
  RequestStream(std::string request_id, int32_t num_choices, size_t capacity);

  const std::string& request_id() const { return request_id_; }
  int32_t num_choices() const { return num_choices_; }
  size_t capacity() const { return capacity_; }

  // --- consumer side (any one thread) ---
  // Registers the wake-up; called at once when events are already waiting.
  void set_wakeup(std::function<void()> wakeup);
  std::optional<RequestEvent> try_pop();
  // Moves every waiting event into `out` (appended); returns how many.
  size_t poll(std::vector<RequestEvent>& out);
  // Blocks up to `timeout` for at least one event (tests, CLI tools); never used by
  // the engine. Returns false on timeout.
  bool wait(std::chrono::milliseconds timeout);
  // Client gone: the engine aborts the request at its next step.
  void cancel() { cancelled_.store(true, std::memory_order_release); }
  bool is_cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // Every choice has finished and every event has been popped.
  bool is_done() const;

  // --- producer side (the engine thread) ---
  // False, with nothing queued, when `capacity` deltas are already waiting.
  bool push_delta(ChoiceDelta delta);
  bool push_delta(AudioDelta delta);  // the same bound: an audio delta counts as one
  // Always queued; the last event of its choice.
  void push_finish(ChoiceFinish finish);
  bool is_finished() const;  // every choice has had its finish pushed

 private:
  bool push_bounded(RequestEvent delta);
  void push(RequestEvent event, std::unique_lock<std::mutex>& lock);

  const std::string request_id_;
  const int32_t num_choices_;
  const size_t capacity_;
  std::atomic<bool> cancelled_{false};

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RequestEvent> events_;  // guarded by mutex_
  size_t num_deltas_ = 0;            // deltas in events_
  int32_t num_finished_ = 0;         // finishes pushed
  std::function<void()> wakeup_;     // guarded by mutex_ (copied out to call)
};

}  // namespace sluice::engine
