// ConnectionTracker's admission: regular slots, the per-address cap, and the probe
// slots kept beyond the caps, whose silent holders make room for newcomers.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <vector>

#include "server/http/connection_tracker.h"

namespace unit_server_http_test_connection_tracker {

using namespace sluice::server;
using Admission = ConnectionTracker::Admission;

namespace {

struct Fixture {
  asio::io_context ioc;
  std::vector<ConnectionTracker::Handle> open;

  ConnectionTracker::Handle make() {
    auto connection = std::make_shared<Connection>(asio::ip::tcp::socket(ioc));
    connection->stream.socket().open(asio::ip::tcp::v4());
    open.push_back(connection);
    return connection;
  }
};

}  // namespace

TEST_CASE("connections over max_connections get a probe slot, then a refusal") {
  Fixture f;
  ConnectionTracker tracker({.max_connections = 2, .max_per_address = 0, .probe_slots = 1});
  CHECK(tracker.admit(f.make(), "10.0.0.1") == Admission::regular);
  CHECK(tracker.admit(f.make(), "10.0.0.2") == Admission::regular);
  auto probe = f.make();
  CHECK(tracker.admit(probe, "10.0.0.3") == Admission::probe_only);
  CHECK(probe->probe_only);
  tracker.header_arrived(probe);  // no longer the one to close for a newcomer
  CHECK(tracker.admit(f.make(), "10.0.0.4") == Admission::refused);
  CHECK(tracker.size() == 3);
  tracker.remove(f.open[0]);
  auto next = f.make();
  CHECK(tracker.admit(next, "10.0.0.5") == Admission::regular);
  CHECK_FALSE(next->probe_only);
}

TEST_CASE("a full set of probe slots closes its oldest silent holder for a newcomer") {
  Fixture f;
  ConnectionTracker tracker({.max_connections = 1, .max_per_address = 0, .probe_slots = 2});
  REQUIRE(tracker.admit(f.make(), "a") == Admission::regular);
  auto silent_old = f.make();
  auto silent_new = f.make();
  REQUIRE(tracker.admit(silent_old, "a") == Admission::probe_only);
  REQUIRE(tracker.admit(silent_new, "a") == Admission::probe_only);
  auto probe = f.make();
  CHECK(tracker.admit(probe, "a") == Admission::probe_only);
  f.ioc.run();  // the close runs on the victim's strand
  CHECK_FALSE(silent_old->stream.socket().is_open());
  CHECK(silent_new->stream.socket().is_open());
  CHECK(probe->stream.socket().is_open());
  // The victim's session then ends and removes it; the slot count stays right.
  tracker.remove(silent_old);
  tracker.header_arrived(silent_new);
  tracker.header_arrived(probe);
  CHECK(tracker.admit(f.make(), "a") == Admission::refused);
}

TEST_CASE("max_per_address caps one address's regular slots, not the others'") {
  Fixture f;
  ConnectionTracker tracker({.max_connections = 10, .max_per_address = 2, .probe_slots = 0});
  auto first = f.make();
  CHECK(tracker.admit(first, "10.0.0.1") == Admission::regular);
  CHECK(tracker.admit(f.make(), "10.0.0.1") == Admission::regular);
  CHECK(tracker.admit(f.make(), "10.0.0.1") == Admission::refused);
  CHECK(tracker.admit(f.make(), "10.0.0.2") == Admission::regular);
  tracker.remove(first);
  CHECK(tracker.admit(f.make(), "10.0.0.1") == Admission::regular);
}

TEST_CASE("a probe slot goes back when its connection ends; an evicted one is not given back twice") {
  Fixture f;
  ConnectionTracker tracker({.max_connections = 0, .max_per_address = 0, .probe_slots = 1});
  auto probe = f.make();
  REQUIRE(tracker.admit(probe, "a") == Admission::probe_only);
  tracker.header_arrived(probe);
  CHECK(tracker.admit(f.make(), "a") == Admission::refused);
  tracker.remove(probe);
  auto silent = f.make();
  CHECK(tracker.admit(silent, "a") == Admission::probe_only);
  auto newcomer = f.make();
  CHECK(tracker.admit(newcomer, "a") == Admission::probe_only);  // `silent` made room
  tracker.remove(silent);                                        // its slot was already given away
  tracker.header_arrived(newcomer);
  CHECK(tracker.admit(f.make(), "a") == Admission::refused);
  CHECK(tracker.size() == 1);
}

TEST_CASE("draining closes idle connections at once, busy ones only once they are done") {
  Fixture f;
  ConnectionTracker tracker;
  auto idle = f.make();
  auto busy = f.make();
  REQUIRE(tracker.admit(idle, "a") == Admission::regular);
  REQUIRE(tracker.admit(busy, "a") == Admission::regular);  // admitted busy: its first request is read
  CHECK(tracker.enter_idle(idle));
  int num_drained = 0;
  tracker.begin_drain([&] { ++num_drained; });
  CHECK(tracker.is_draining());
  f.ioc.run();  // the closes run on each connection's strand
  CHECK_FALSE(idle->stream.socket().is_open());
  CHECK(busy->stream.socket().is_open());
  // The busy one finishes its response; waiting for another is refused.
  CHECK_FALSE(tracker.enter_idle(busy));
  tracker.remove(idle);
  CHECK(num_drained == 0);
  tracker.remove(busy);
  CHECK(num_drained == 1);  // the last one out
  CHECK(tracker.size() == 0);
}

TEST_CASE("draining with no connection open is drained at once") {
  ConnectionTracker tracker;
  int num_drained = 0;
  tracker.begin_drain([&] { ++num_drained; });
  CHECK(num_drained == 1);
  CHECK(tracker.is_draining());
}

TEST_CASE("an idle connection whose next request arrives before the drain's close runs is served") {
  Fixture f;
  ConnectionTracker tracker;
  auto connection = f.make();
  REQUIRE(tracker.admit(connection, "a") == Admission::regular);
  CHECK(tracker.enter_idle(connection));
  tracker.begin_drain([] {});
  tracker.enter_busy(connection);  // bytes arrived: the session reads a request
  f.ioc.run();
  CHECK(connection->stream.socket().is_open());
}

TEST_CASE("close_all closes busy and idle connections alike") {
  Fixture f;
  ConnectionTracker tracker;
  auto idle = f.make();
  auto busy = f.make();
  REQUIRE(tracker.admit(idle, "a") == Admission::regular);
  REQUIRE(tracker.admit(busy, "b") == Admission::regular);
  CHECK(tracker.enter_idle(idle));
  tracker.begin_drain([] {});
  tracker.close_all();
  f.ioc.run();
  CHECK_FALSE(idle->stream.socket().is_open());
  CHECK_FALSE(busy->stream.socket().is_open());
}

TEST_CASE("enter_idle is allowed until the drain begins") {
  Fixture f;
  ConnectionTracker tracker;
  auto connection = f.make();
  REQUIRE(tracker.admit(connection, "a") == Admission::regular);
  CHECK_FALSE(tracker.is_draining());
  CHECK(tracker.enter_idle(connection));
  tracker.enter_busy(connection);
  CHECK(tracker.enter_idle(connection));
}
}  // namespace unit_server_http_test_connection_tracker
