#include "engine/request_stream.h"

#include <utility>

namespace sluice::engine {

RequestStream::RequestStream(std::string request_id, int32_t num_choices, size_t capacity)
    : request_id_(std::move(request_id)), num_choices_(num_choices), capacity_(capacity == 0 ? 1 : capacity) {}

void RequestStream::set_wakeup(std::function<void()> wakeup) {
  std::unique_lock lock(mutex_);
  wakeup_ = std::move(wakeup);
  const bool pending = !events_.empty();
  auto call = wakeup_;
  lock.unlock();
  if (pending && call) call();
}

std::optional<RequestEvent> RequestStream::try_pop() {
  std::lock_guard lock(mutex_);
  if (events_.empty()) return std::nullopt;
  RequestEvent event = std::move(events_.front());
  events_.pop_front();
  if (!std::holds_alternative<ChoiceFinish>(event)) --num_deltas_;
  return event;
}

size_t RequestStream::poll(std::vector<RequestEvent>& out) {
  std::lock_guard lock(mutex_);
  const size_t count = events_.size();
  for (auto& event : events_) out.push_back(std::move(event));
  events_.clear();
  num_deltas_ = 0;
  return count;
}

bool RequestStream::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return ready_.wait_for(lock, timeout, [&] { return !events_.empty(); });
}

bool RequestStream::is_done() const {
  std::lock_guard lock(mutex_);
  return num_finished_ >= num_choices_ && events_.empty();
}

bool RequestStream::is_finished() const {
  std::lock_guard lock(mutex_);
  return num_finished_ >= num_choices_;
}

bool RequestStream::push_delta(ChoiceDelta delta) { return push_bounded(std::move(delta)); }

bool RequestStream::push_delta(AudioDelta delta) { return push_bounded(std::move(delta)); }

bool RequestStream::push_bounded(RequestEvent delta) {
  std::unique_lock lock(mutex_);
  if (num_deltas_ >= capacity_) return false;
  ++num_deltas_;
  push(std::move(delta), lock);
  return true;
}

void RequestStream::push_finish(ChoiceFinish finish) {
  std::unique_lock lock(mutex_);
  ++num_finished_;
  push(std::move(finish), lock);
}

void RequestStream::push(RequestEvent event, std::unique_lock<std::mutex>& lock) {
  const bool was_empty = events_.empty();
  events_.push_back(std::move(event));
  auto call = was_empty ? wakeup_ : nullptr;
  lock.unlock();
  ready_.notify_all();
  if (call) call();
}

}  // namespace sluice::engine
