#pragma once
// Turns on the CPU's cores for everything that computes there: every CPU engine's
// steps (text and speech) and the speech codec worker's decode passes. Each runs a
// compute pool as wide as the machine; two such pools at once on the same cores stall
// each other (a barrier spins for a partner thread that the other pool preempted).
// Measured on 2 cores: a speech engine's steps and codec passes at once gave 4 streams
// 0.83x real time instead of 1.2x; one speech stream beside 4 text streams ran at
// 0.12x real time. Turns are served in arrival order, so nobody starves: step,
// decode, another model's step, ... A decode that falls behind simply decodes more
// frames per call. One exception: an urgent turn (the codec's pass that makes a
// speech request's first audio) goes ahead of the turns still waiting, after any
// urgent ones. Without it the engine, which asks for its next step's turn the moment
// it hands a frame over, ran a whole step before the first audio (measured: time to
// first audio of one stream 200 ms where the work takes 150). Each request has one
// first audio, so the others wait at most that many passes. A disabled ComputeTurns
// (a GPU: its queue orders the work) takes no turns. The serving process shares one
// among all its CPU engines.
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>

namespace sluice::engine {

class ComputeTurns {
 public:
  explicit ComputeTurns(bool enabled) : enabled_(enabled) {}

  // Holds a turn from construction until destruction. With std::defer_lock the
  // constructor only takes a place in line (it never blocks: a thread can do so
  // under a lock of its own, so that whoever sees that lock's state knows it is in
  // line) and wait() waits for the turn; destroyed unwaited, it leaves the line.
  class Turn {
   public:
    explicit Turn(ComputeTurns& turns, bool urgent = false) : Turn(turns, urgent, std::defer_lock) { wait(); }
    Turn(ComputeTurns& turns, bool urgent, std::defer_lock_t) : turns_(turns), ticket_(turns.enqueue(urgent)) {}
    ~Turn() {
      if (held_) {
        turns_.release();
      } else {
        turns_.leave(ticket_);
      }
    }
    void wait() {
      turns_.wait_for(ticket_);
      held_ = true;
    }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    ComputeTurns& turns_;
    uint64_t ticket_;
    bool held_ = false;
  };

  bool enabled() const { return enabled_; }

  // Turns asked for so far, granted or still waiting (0 when disabled): tests read it
  // to know that a thread has taken its place in line.
  uint64_t num_tickets() const {
    std::lock_guard lock(mutex_);
    return next_ticket_;
  }

 private:
  struct Waiter {
    uint64_t ticket;
    bool urgent;
  };

  uint64_t enqueue(bool urgent) {
    if (!enabled_) return 0;
    std::lock_guard lock(mutex_);
    const uint64_t ticket = next_ticket_++;
    const auto place = urgent ? std::ranges::find_if(waiting_, [](const Waiter& w) { return !w.urgent; })
                              : waiting_.end();
    waiting_.insert(place, Waiter{ticket, urgent});
    return ticket;
  }
  void wait_for(uint64_t ticket) {
    if (!enabled_) return;
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !held_ && waiting_.front().ticket == ticket; });
    waiting_.pop_front();
    held_ = true;
  }
  void leave(uint64_t ticket) {
    if (!enabled_) return;
    {
      std::lock_guard lock(mutex_);
      std::erase_if(waiting_, [&](const Waiter& w) { return w.ticket == ticket; });
    }
    cv_.notify_all();  // the next in line may be served now
  }
  void release() {
    if (!enabled_) return;
    {
      std::lock_guard lock(mutex_);
      held_ = false;
    }
    cv_.notify_all();
  }

  const bool enabled_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t next_ticket_ = 0;    // guarded by mutex_
  bool held_ = false;           // guarded by mutex_
  std::deque<Waiter> waiting_;  // in serving order; guarded by mutex_
};

}  // namespace sluice::engine
