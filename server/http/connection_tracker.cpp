#include "server/http/connection_tracker.h"

#include <boost/asio/post.hpp>

#include <vector>

namespace sluice::server {

ConnectionTracker::Admission ConnectionTracker::admit(const Handle& connection, const std::string& address) {
  std::lock_guard lock(mutex_);
  const bool address_full =
      limits_.max_per_address > 0 && regular_per_address_[address] >= limits_.max_per_address;
  Entry entry{.handle = connection, .address = address, .order = next_order_++};
  if (num_regular_ < limits_.max_connections && !address_full) {
    ++num_regular_;
    ++regular_per_address_[address];
    connection->probe_only = false;
    connections_.emplace(connection.get(), std::move(entry));
    return Admission::regular;
  }
  if (regular_per_address_[address] == 0) regular_per_address_.erase(address);
  if (limits_.probe_slots == 0) return Admission::refused;
  if (num_probe_ >= limits_.probe_slots && !evict_waiting_probe()) return Admission::refused;
  ++num_probe_;
  entry.probe_only = true;
  connection->probe_only = true;
  connections_.emplace(connection.get(), std::move(entry));
  return Admission::probe_only;
}

bool ConnectionTracker::evict_waiting_probe() {
  Entry* oldest = nullptr;
  for (auto& [key, entry] : connections_) {
    if (!entry.probe_only || entry.evicted || entry.header_arrived) continue;
    if (oldest == nullptr || entry.order < oldest->order) oldest = &entry;
  }
  if (oldest == nullptr) return false;
  oldest->evicted = true;
  --num_probe_;
  Handle victim = oldest->handle;
  asio::post(victim->stream.get_executor(), [victim] { close_now(victim); });
  return true;
}

void ConnectionTracker::remove(const Handle& connection) {
  std::function<void()> drained;
  {
    std::lock_guard lock(mutex_);
    auto it = connections_.find(connection.get());
    if (it != connections_.end()) {
      const Entry& entry = it->second;
      if (!entry.probe_only) {
        --num_regular_;
        auto count = regular_per_address_.find(entry.address);
        if (count != regular_per_address_.end() && --count->second == 0) regular_per_address_.erase(count);
      } else if (!entry.evicted) {
        --num_probe_;
      }
      connections_.erase(it);
    }
    if (draining_ && connections_.empty() && on_drained_) drained = std::exchange(on_drained_, {});
  }
  if (drained) drained();
}

size_t ConnectionTracker::size() const {
  std::lock_guard lock(mutex_);
  return connections_.size();
}

bool ConnectionTracker::enter_idle(const Handle& connection) {
  std::lock_guard lock(mutex_);
  if (draining_) return false;
  auto it = connections_.find(connection.get());
  if (it != connections_.end()) it->second.busy = false;
  return true;
}

void ConnectionTracker::enter_busy(const Handle& connection) {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(connection.get());
  if (it != connections_.end()) it->second.busy = true;
}

void ConnectionTracker::header_arrived(const Handle& connection) {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(connection.get());
  if (it != connections_.end()) it->second.header_arrived = true;
}

bool ConnectionTracker::is_draining() const {
  std::lock_guard lock(mutex_);
  return draining_;
}

void ConnectionTracker::begin_drain(std::function<void()> on_drained) {
  std::vector<Handle> idle;
  bool already_empty = false;
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
    for (auto& [key, entry] : connections_) {
      if (!entry.busy) idle.push_back(entry.handle);
    }
    already_empty = connections_.empty();
    if (!already_empty) on_drained_ = std::move(on_drained);
  }
  for (const auto& connection : idle) {
    // Bytes of a new request may arrive before the close runs; then it is served.
    asio::post(connection->stream.get_executor(), [this, connection] {
      if (!is_busy(connection)) close_now(connection);
    });
  }
  if (already_empty && on_drained) on_drained();
}

void ConnectionTracker::close_all() {
  std::vector<Handle> all;
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, entry] : connections_) all.push_back(entry.handle);
  }
  for (const auto& connection : all) {
    asio::post(connection->stream.get_executor(), [connection] { close_now(connection); });
  }
}

bool ConnectionTracker::is_busy(const Handle& connection) const {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(connection.get());
  return it != connections_.end() && it->second.busy;
}

void ConnectionTracker::close_now(const Handle& connection) {
  beast::error_code ignored;
  connection->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  connection->stream.close();
}

}  // namespace sluice::server
