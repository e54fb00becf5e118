#pragma once
// Turns on the CPU's cores for everything that computes there: every CPU engine's
// steps (text and speech) and the speech codec worker's decode passes. Each runs a
// compute pool as wide as the machine; two such pools at once on the same cores stall
// each other (a barrier spins for a partner thread that the other pool preempted).
// Measured on 2 cores: a speech engine's steps and codec passes at once gave 4 streams
// 0.83x real time instead of 1.2x; one speech stream beside 4 text streams ran at
// 0.12x real time. Turns are served in arrival order (a ticket lock), so nobody
// starves: step, decode, another model's step, ... A decode that falls behind simply
// decodes more frames per call. A disabled ComputeTurns (a GPU: its queue orders the
// work) takes no turns. The serving process shares one among all its CPU engines.
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace sluice::engine {

class ComputeTurns {
 public:
  explicit ComputeTurns(bool enabled) : enabled_(enabled) {}

  // Holds a turn from construction until destruction.
  class Turn {
   public:
    explicit Turn(ComputeTurns& turns) : turns_(turns) { turns_.acquire(); }
    ~Turn() { turns_.release(); }
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;

   private:
    ComputeTurns& turns_;
  };

  // Turns asked for so far, granted or still waiting (0 when disabled): tests read it
  // to know that a thread has taken its place in line.
  uint64_t num_tickets() const {
    std::lock_guard lock(mutex_);
    return next_ticket_;
  }

 private:
  void acquire() {
    if (!enabled_) return;
    std::unique_lock lock(mutex_);
    const uint64_t ticket = next_ticket_++;
    cv_.wait(lock, [&] { return serving_ == ticket; });
  }
  void release() {
    if (!enabled_) return;
    {
      std::lock_guard lock(mutex_);
      ++serving_;
    }
    cv_.notify_all();
  }

  const bool enabled_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t next_ticket_ = 0;  // guarded by mutex_
  uint64_t serving_ = 0;      // guarded by mutex_
};

}  // namespace sluice::engine
