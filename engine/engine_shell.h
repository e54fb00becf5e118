#pragma once
// What every engine (text: Engine, speech: tts::SpeechEngine) shares between its one
// thread and everybody else's: the inbox of submitted requests and of aborts, the ids
// in flight, the queue limit, the submit counters, the published stats, the
// lifecycle (start, stop, death) and the step clock that health() reads.
//
// The engine thread's loop is the engine's own; the shell runs it on its thread and
// turns an exception that escapes it into a death: the shell stops taking work,
// health() says "dead" with the reason, and the engine's on_death ends what it held.
//
// The queue limit counts sequences (a text request's choices, one per speech
// request): the scheduler's waiting count after the engine's last schedule() (see
// set_num_waiting) plus what sits in the inbox. One lock guards everything here;
// nothing else is locked while it is held.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/engine_stats.h"
#include "engine/request_stream.h"
#include "engine/scheduling/scheduler.h"

namespace sluice::engine {

enum class SubmitStatus { accepted, queue_full, rejected, shutting_down };

struct SubmitResult {
  SubmitStatus status = SubmitStatus::accepted;
  std::shared_ptr<RequestStream> stream;  // accepted only
  std::string message;                    // why not
  std::string param;                      // rejected: the offending field ("max_tokens", "stop", ...)
  std::string code;                       // a machine-readable reason ("context_length_exceeded", "engine_dead"), or ""
  bool ok() const { return status == SubmitStatus::accepted; }
};

SubmitResult submit_rejected(std::string message, std::string param);

// Whether an engine can serve: its thread runs and no step has been running too
// long (a wedged kernel, a deadlocked backend).
struct EngineHealth {
  bool ok = true;
  std::string status = "ok";  // "ok" | "wedged" (a step past the timeout) | "dead" (the thread stopped)
  std::string reason;         // why not: "the engine thread stopped: ..." or "a step has been running for ..."
};

// steady_clock now, in ns: what the shell stores when a step begins (0: no step).
int64_t steady_now_ns();
// The health of an engine whose thread is alive: "wedged" when the step that began
// at step_started_ns has run past step_timeout (zero or negative: never).
EngineHealth step_health(int64_t step_started_ns, std::chrono::nanoseconds step_timeout);

// What an engine publishes after a step: the scheduler's figures with its KV pool
// and the requests it holds (the shell adds the inbox and submit counters).
EngineStats engine_stats(const SchedulerStats& scheduler, int32_t num_active_requests, int32_t num_kv_blocks,
                         int32_t block_size, uint64_t kv_cache_bytes);

// Item: what the engine queues per request (moved in by push, out by drain).
template <class Item>
class EngineShell {
 public:
  explicit EngineShell(int32_t max_waiting) : max_waiting_(max_waiting) {}
  ~EngineShell() { stop(); }
  EngineShell(const EngineShell&) = delete;
  EngineShell& operator=(const EngineShell&) = delete;

  // ---- any thread ----

  // Queues the items of one API request, all or nothing: `ids` (one per item) must
  // not be in flight nor repeat, and the queue must take `num_sequences` more.
  // Refusals: shutting_down (code "engine_dead" with the reason once dead),
  // rejected (param "request_id"), queue_full. Accepted: no stream is set.
  SubmitResult push(std::vector<Item> items, const std::vector<std::string>& ids, int32_t num_sequences) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) {
        SubmitResult out{SubmitStatus::shutting_down, nullptr, "the server is shutting down", "", ""};
        if (dead_reason_) out = {SubmitStatus::shutting_down, nullptr, *dead_reason_, "", "engine_dead"};
        return out;
      }
      for (size_t i = 0; i < ids.size(); ++i) {
        bool repeated = in_flight_.contains(ids[i]);
        for (size_t j = 0; j < i && !repeated; ++j) repeated = ids[j] == ids[i];
        if (repeated) {
          ++num_rejected_;
          return submit_rejected("a request with id '" + ids[i] + "' is already in flight", "request_id");
        }
      }
      const int32_t waiting = num_waiting_ + num_inbox_sequences_;
      if (waiting + num_sequences > max_waiting_) {
        ++num_queue_full_;
        return {SubmitStatus::queue_full, nullptr,
                "the request queue is full (" + std::to_string(waiting) + " waiting); retry later", "", ""};
      }
      for (size_t i = 0; i < items.size(); ++i) {
        in_flight_.insert(ids[i]);
        inbox_.push_back(std::move(items[i]));
      }
      num_submitted_ += items.size();
      num_inbox_sequences_ += num_sequences;
    }
    cv_.notify_one();
    return {};
  }

  // Asks the engine thread to end a request; false when none with that id is in flight.
  bool abort(std::string_view id) {
    {
      std::lock_guard lock(mutex_);
      if (!in_flight_.contains(std::string(id))) return false;
      aborts_.emplace_back(id);
    }
    cv_.notify_one();
    return true;
  }

  // Runs `task` on the engine thread at its next drain, between steps (an operator's
  // command such as flushing the prefix cache). False when the engine is stopping or
  // dead: nothing will run it. A task the thread never reaches (it died, or stopped
  // first) is destroyed unrun, so it must answer its caller from its destructor too
  // (a std::promise does: broken_promise).
  bool post(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return false;
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
    return true;
  }

  // A request refused before push (validation): counted in stats().
  void count_rejected() {
    std::lock_guard lock(mutex_);
    ++num_rejected_;
  }

  bool is_stopping() const {
    std::lock_guard lock(mutex_);
    return stopping_;
  }

  std::optional<std::string> death_reason() const {
    std::lock_guard lock(mutex_);
    return dead_reason_;
  }

  EngineHealth health(std::chrono::nanoseconds step_timeout) const {
    if (auto reason = death_reason()) return {false, "dead", *reason};
    return step_health(step_started_ns_.load(), step_timeout);
  }

  // The stats the engine thread published last, with the inbox and submit counters.
  EngineStats stats() const {
    std::lock_guard lock(mutex_);
    EngineStats out = published_;
    out.num_pending = static_cast<int32_t>(inbox_.size());
    out.num_requests_submitted = num_submitted_;
    out.num_requests_rejected = num_rejected_;
    out.num_requests_queue_full = num_queue_full_;
    return out;
  }

  // ---- lifecycle ----

  // Spawns the engine thread running `loop` (it returns once drain() says stop).
  // An exception escaping it marks the engine dead (reason_prefix + what) and runs
  // on_death(reason, the items still queued) on the thread: the engine ends there
  // what it holds. Nothing escapes the thread. A second start, or one after stop(),
  // does nothing.
  using DeathHandler = std::function<void(const std::string& reason, std::vector<Item> queued)>;
  void start(std::function<void()> loop, std::string reason_prefix, DeathHandler on_death) {
    std::lock_guard lock(mutex_);
    if (started_ || stopping_) return;
    started_ = true;
    thread_ = std::thread([this, loop = std::move(loop), prefix = std::move(reason_prefix),
                           on_death = std::move(on_death)] {
      std::string what;
      try {
        loop();
        return;
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
        what = "an exception of unknown type";
      }
      const std::string reason = prefix + what;
      std::vector<Item> queued = mark_dead(reason);
      try {
        on_death(reason, std::move(queued));
      } catch (...) {
        // The shell is dead already: submit() and health() say so.
      }
    });
  }

  // Takes no more work, wakes the thread and joins it. True when the thread was
  // started; false when it never was (the caller ends what was queued, with
  // drain() on its own thread). Idempotent; concurrent callers wait for the join.
  bool stop() {
    std::lock_guard stop_lock(stop_mutex_);
    bool started = false;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      started = started_;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return started;
  }

  // ---- the engine thread (or stop()'s caller when it never started) ----

  struct Drained {
    std::vector<Item> items;
    std::vector<std::string> aborts;  // ids whose requests are to end "abort"
    std::vector<std::function<void()>> tasks;  // posted with post(), to run now
    bool go_on = true;                // false once stop() was called
  };

  // Takes what was submitted and aborted since the last call. The inbox's sequences
  // count as waiting until the next set_num_waiting().
  Drained drain() {
    Drained out;
    std::lock_guard lock(mutex_);
    out.items.swap(inbox_);
    out.aborts.swap(aborts_);
    out.tasks.swap(tasks_);
    out.go_on = !stopping_;
    num_waiting_ += num_inbox_sequences_;
    num_inbox_sequences_ = 0;
    return out;
  }

  // Sleeps until something is submitted or aborted, or stop() (at most `at_most`).
  void wait_for_work(std::optional<std::chrono::milliseconds> at_most = std::nullopt) {
    std::unique_lock lock(mutex_);
    const auto has_news = [&] { return stopping_ || !inbox_.empty() || !aborts_.empty() || !tasks_.empty(); };
    if (at_most) {
      cv_.wait_for(lock, *at_most, has_news);
    } else {
      cv_.wait(lock, has_news);
    }
  }

  // The scheduler's waiting sequences after a schedule(): the queue limit's base.
  void set_num_waiting(int32_t num_sequences) {
    std::lock_guard lock(mutex_);
    num_waiting_ = num_sequences;
  }

  // A request ended (or never got in): its id may be used again.
  void release(const std::string& id) {
    std::lock_guard lock(mutex_);
    in_flight_.erase(id);
  }

  void begin_step() { step_started_ns_.store(steady_now_ns()); }
  void end_step() { step_started_ns_.store(0); }

  void publish(const EngineStats& stats) {
    std::lock_guard lock(mutex_);
    published_ = stats;
  }

  // Ends the shell's part of a death (also what start's thread does): no more work,
  // health() says "dead". Returns what was still queued, for the engine to end.
  std::vector<Item> mark_dead(const std::string& reason) {
    std::vector<Item> left;
    std::vector<std::function<void()>> unrun;  // destroyed unlocked: their callers hear of it
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      if (!dead_reason_) dead_reason_ = reason;
      left.swap(inbox_);
      unrun.swap(tasks_);
      num_inbox_sequences_ = 0;
    }
    step_started_ns_.store(0);
    cv_.notify_all();
    return left;
  }

 private:
  const int32_t max_waiting_;

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Item> inbox_;
  std::vector<std::string> aborts_;
  std::vector<std::function<void()>> tasks_;
  std::unordered_set<std::string> in_flight_;
  int32_t num_waiting_ = 0;          // the scheduler's, after the last schedule()
  int32_t num_inbox_sequences_ = 0;  // of the items in inbox_
  bool stopping_ = false;
  bool started_ = false;
  std::optional<std::string> dead_reason_;
  uint64_t num_submitted_ = 0, num_rejected_ = 0, num_queue_full_ = 0;
  EngineStats published_;

  // steady_now_ns() when the current step began; 0 between steps. For health().
  std::atomic<int64_t> step_started_ns_{0};
  std::mutex stop_mutex_;  // serializes stop() callers around the join
  std::thread thread_;
};

}  // namespace sluice::engine
