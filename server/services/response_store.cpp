#include "server/services/response_store.h"

namespace sluice::server {

bool ResponseStore::is_expired(const Entry& entry, Clock::time_point now) const {
  if (limits_.ttl_s <= 0) return false;
  return now - entry.stored_at >= std::chrono::duration<double>(limits_.ttl_s);
}

void ResponseStore::remove(Order::iterator it) {
  bytes_ -= it->bytes;
  index_.erase(it->id);
  order_.erase(it);
}

bool ResponseStore::put(const std::string& id, StoredResponse response, Clock::time_point now) {
  const size_t bytes = id.size() + response.body.size() + response.conversation.size();
  std::lock_guard lock(mutex_);
  if (auto found = index_.find(id); found != index_.end()) remove(found->second);
  if (bytes > limits_.max_bytes || limits_.max_count == 0) return false;
  order_.push_front({id, std::make_shared<const StoredResponse>(std::move(response)), bytes, now});
  index_[id] = order_.begin();
  bytes_ += bytes;
  while (order_.size() > limits_.max_count || bytes_ > limits_.max_bytes) remove(std::prev(order_.end()));
  return true;
}

std::shared_ptr<const StoredResponse> ResponseStore::get(const std::string& id, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto found = index_.find(id);
  if (found == index_.end()) return nullptr;
  if (is_expired(*found->second, now)) {
    remove(found->second);
    return nullptr;
  }
  order_.splice(order_.begin(), order_, found->second);
  return order_.front().response;
}

bool ResponseStore::erase(const std::string& id, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  auto found = index_.find(id);
  if (found == index_.end()) return false;
  const bool expired = is_expired(*found->second, now);
  remove(found->second);
  return !expired;
}

size_t ResponseStore::size() const {
  std::lock_guard lock(mutex_);
  return order_.size();
}

size_t ResponseStore::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

}  // namespace sluice::server
