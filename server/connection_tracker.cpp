#include "server/connection_tracker.h"

#include <boost/asio/post.hpp>

#include <vector>

namespace sluice::server {

void ConnectionTracker::add(const Handle& connection) {
  std::lock_guard lock(mutex_);
  connections_.emplace(connection.get(), std::make_pair(connection, true));
}

void ConnectionTracker::remove(const Handle& connection) {
  std::function<void()> drained;
  {
    std::lock_guard lock(mutex_);
    connections_.erase(connection.get());
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
  if (it != connections_.end()) it->second.second = false;
  return true;
}

void ConnectionTracker::enter_busy(const Handle& connection) {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(connection.get());
  if (it != connections_.end()) it->second.second = true;
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
      if (!entry.second) idle.push_back(entry.first);
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
    for (auto& [key, entry] : connections_) all.push_back(entry.first);
  }
  for (const auto& connection : all) {
    asio::post(connection->stream.get_executor(), [connection] { close_now(connection); });
  }
}

bool ConnectionTracker::is_busy(const Handle& connection) const {
  std::lock_guard lock(mutex_);
  auto it = connections_.find(connection.get());
  return it != connections_.end() && it->second.second;
}

void ConnectionTracker::close_now(const Handle& connection) {
  beast::error_code ignored;
  connection->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  connection->stream.close();
}

}  // namespace sluice::server
