#pragma once
// The responses that /v1/responses keeps (store: true) so that a later request can
// continue them (previous_response_id) and GET / DELETE can find them: in memory
// only, bounded by count and by bytes (least recently used first out) and by age
// (an entry older than the TTL is gone, whenever it is next looked at). A restart
// forgets everything, which clients see as an unknown id (404).
//
// Thread-safe: routes on every connection strand share one store.
#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace sluice::server {

struct StoredResponse {
  std::string body;          // the response object as JSON text (what GET returns)
  std::string conversation;  // the chat messages it continued, its input and its output (a JSON array)
};

struct ResponseStoreLimits {
  size_t max_count = 1000;
  size_t max_bytes = size_t{256} << 20;
  double ttl_s = 3600;  // <= 0: entries never expire
};

class ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ResponseStore(ResponseStoreLimits limits) : limits_(limits) {}

  // Keeps `response` under `id` (replacing an entry of that id), then evicts the least
  // recently used entries until the bounds hold. An entry larger than max_bytes on
  // its own is not kept; returns whether it was.
  bool put(const std::string& id, StoredResponse response, Clock::time_point now = Clock::now());
  // The entry, marked as used now; null when unknown, evicted or expired.
  std::shared_ptr<const StoredResponse> get(const std::string& id, Clock::time_point now = Clock::now());
  // Removes the entry; false when there was none (expired counts as none).
  bool erase(const std::string& id, Clock::time_point now = Clock::now());

  size_t size() const;
  size_t bytes() const;

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const StoredResponse> response;
    size_t bytes = 0;
    Clock::time_point stored_at;
  };
  using Order = std::list<Entry>;  // most recently used first

  bool is_expired(const Entry& entry, Clock::time_point now) const;
  void remove(Order::iterator it);

  ResponseStoreLimits limits_;
  mutable std::mutex mutex_;
  Order order_;
  std::unordered_map<std::string, Order::iterator> index_;
  size_t bytes_ = 0;
};

}  // namespace sluice::server
