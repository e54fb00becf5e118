// ResponseStore: LRU eviction by count and by bytes, TTL expiry, replace and erase.
#include "server/services/response_store.h"

#include <doctest/doctest.h>

#include <string>

namespace sluice::server::unit_server_services_test_response_store {
namespace {

using Clock = ResponseStore::Clock;

StoredResponse entry(size_t body_bytes) { return {std::string(body_bytes, 'x'), "[]"}; }

TEST_CASE("response store: get returns what was put; unknown ids are null") {
  ResponseStore store({.max_count = 4, .max_bytes = 1 << 20, .ttl_s = 0});
  CHECK(store.put("resp_a", {"{\"id\":\"resp_a\"}", "[{\"role\":\"user\"}]"}));
  auto got = store.get("resp_a");
  REQUIRE(got);
  CHECK(got->body == "{\"id\":\"resp_a\"}");
  CHECK(got->conversation == "[{\"role\":\"user\"}]");
  CHECK_FALSE(store.get("resp_b"));
}

TEST_CASE("response store: the least recently used entry goes first when the count is full") {
  ResponseStore store({.max_count = 2, .max_bytes = 1 << 20, .ttl_s = 0});
  store.put("a", entry(1));
  store.put("b", entry(1));
  CHECK(store.get("a"));  // a is now more recent than b
  store.put("c", entry(1));
  CHECK(store.size() == 2);
  CHECK(store.get("a"));
  CHECK_FALSE(store.get("b"));
  CHECK(store.get("c"));
}

TEST_CASE("response store: bytes bound evicts old entries and refuses an entry larger than the bound") {
  // Each entry: id (1) + body + conversation "[]" (2).
  ResponseStore store({.max_count = 100, .max_bytes = 100, .ttl_s = 0});
  store.put("a", entry(40));  // 43 bytes
  store.put("b", entry(40));  // 86
  store.put("c", entry(40));  // 129 > 100: a goes
  CHECK_FALSE(store.get("a"));
  CHECK(store.get("b"));
  CHECK(store.get("c"));
  CHECK(store.bytes() == 86);
  CHECK_FALSE(store.put("huge", entry(200)));
  CHECK_FALSE(store.get("huge"));
  CHECK(store.size() == 2);  // a refused entry evicts nothing
}

TEST_CASE("response store: entries expire after the TTL") {
  ResponseStore store({.max_count = 10, .max_bytes = 1 << 20, .ttl_s = 60});
  const Clock::time_point t0 = Clock::now();
  store.put("a", entry(1), t0);
  CHECK(store.get("a", t0 + std::chrono::seconds(59)));
  CHECK_FALSE(store.get("a", t0 + std::chrono::seconds(61)));
  CHECK(store.size() == 0);
  store.put("b", entry(1), t0);
  CHECK_FALSE(store.erase("b", t0 + std::chrono::seconds(61)));  // expired: nothing to delete
}

TEST_CASE("response store: replacing an id keeps one entry; erase removes it") {
  ResponseStore store({.max_count = 10, .max_bytes = 1 << 20, .ttl_s = 0});
  store.put("a", entry(10));
  store.put("a", entry(20));
  CHECK(store.size() == 1);
  CHECK(store.bytes() == 1 + 20 + 2);
  CHECK(store.erase("a"));
  CHECK_FALSE(store.erase("a"));
  CHECK_FALSE(store.get("a"));
  CHECK(store.bytes() == 0);
}

}  // namespace
}  // namespace sluice::server
