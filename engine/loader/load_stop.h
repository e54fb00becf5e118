#pragma once
// Lets a shutdown stop a model load part way instead of waiting for every model.
// The thread that loads binds a stop flag with LoadStopScope; the weight binder
// checks it before each tensor (quantizing, repacking or uploading one is the slow
// part of a load) and the daemon between models: check_load_stop() throws
// LoadStopped once the flag is set. A thread with no scope never stops, so tools
// and tests that load models are unaffected.
#include <atomic>
#include <stdexcept>

namespace sluice::loader {

class LoadStopped : public std::runtime_error {
 public:
  LoadStopped() : std::runtime_error("loading stopped: the server is shutting down") {}
};

namespace detail {
inline thread_local const std::atomic<bool>* load_stop_flag = nullptr;
}  // namespace detail

// Binds `stop` to the calling thread for the scope's life (scopes nest).
class LoadStopScope {
 public:
  explicit LoadStopScope(const std::atomic<bool>& stop) : previous_(detail::load_stop_flag) {
    detail::load_stop_flag = &stop;
  }
  ~LoadStopScope() { detail::load_stop_flag = previous_; }
  LoadStopScope(const LoadStopScope&) = delete;
  LoadStopScope& operator=(const LoadStopScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// Throws LoadStopped when the calling thread's stop flag is set.
inline void check_load_stop() {
  const std::atomic<bool>* stop = detail::load_stop_flag;
  if (stop != nullptr && stop->load(std::memory_order_relaxed)) throw LoadStopped();
}

}  // namespace sluice::loader
