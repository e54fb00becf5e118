// ConnectionTracker's admission: regular slots, the per-address cap, and the probe
// slots kept beyond the caps, whose silent holders make room for newcomers.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>

#include <vector>

#include "server/http/connection_tracker.h"

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
