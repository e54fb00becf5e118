#pragma once
// Turns on the CPU's cores for the speech engine's steps and the codec worker's
// decode calls. Each side runs a compute pool as wide as the machine; two such pools
// at once on the same cores stall each other (a barrier spins for a partner thread
// that the other pool preempted): measured on 2 cores, 4 streams ran at 0.83x real
// time together against 1.7x expected from the stages' costs. Turns are served in
// arrival order (a ticket lock), so neither side starves the other: step, decode,
// step, ... and a decode that falls behind simply decodes more frames per call.
// A disabled ComputeTurns (a GPU backend: its queue orders the work) takes no turns.
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace sluice::engine::tts {

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
  std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t next_ticket_ = 0;  // guarded by mutex_
  uint64_t serving_ = 0;      // guarded by mutex_
};

}  // namespace sluice::engine::tts
