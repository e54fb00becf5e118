// The prefill cap paced in time: it settles where a step's prompt tokens cost about
// one decode step, follows a cost that grows with the context, and one noisy step
// cannot swing it.
#include <doctest/doctest.h>

#include "engine/scheduling/prefill_pacer.h"

namespace sluice::engine::unit_engine_scheduling_test_prefill_pacer {
namespace {

// A machine where a decode step costs `decode` seconds and a prompt token `per_token`.
struct SimulatedSteps {
  double decode;
  double per_token;
  void run(PrefillPacer& pacer, int steps) const {
    for (int i = 0; i < steps; ++i) {
      pacer.observe(16, 0, decode);
      pacer.observe(16, pacer.cap(), decode + per_token * static_cast<double>(pacer.cap()));
    }
  }
};

TEST_CASE("prefill pacer: the cap settles at one decode step's worth of prompt tokens") {
  PrefillPacer pacer(32, 16, 2048);
  CHECK(pacer.cap() == 32);
  SimulatedSteps{.decode = 0.020, .per_token = 0.020 / 100}.run(pacer, 30);
  CHECK(pacer.cap() == doctest::Approx(100).epsilon(0.05));
  CHECK(pacer.decode_step_seconds() == doctest::Approx(0.020));

  // Deeper in a long prompt each token attends to more keys and costs more: it follows.
  SimulatedSteps{.decode = 0.020, .per_token = 0.020 / 40}.run(pacer, 30);
  CHECK(pacer.cap() == doctest::Approx(40).epsilon(0.05));
  // More streams make the decode step dearer: more prompt tokens fit beside it.
  SimulatedSteps{.decode = 0.060, .per_token = 0.020 / 40}.run(pacer, 60);
  CHECK(pacer.cap() == doctest::Approx(120).epsilon(0.05));
}

TEST_CASE("prefill pacer: bounds, damping, and steps it must ignore") {
  PrefillPacer pacer(64, 16, 256);
  pacer.observe(16, 64, 0.5);  // no decode-only step seen yet: nothing to compare with
  CHECK(pacer.cap() == 64);
  pacer.observe(0, 0, 0.010);  // nobody decoded: not a decode step
  pacer.observe(16, 64, 0.5);
  CHECK(pacer.cap() == 64);
  pacer.observe(16, 0, 0.010);
  pacer.observe(16, 64, 10.0);  // one stalled step: at most halves the cap
  CHECK(pacer.cap() == 32);
  pacer.observe(16, 32, 10.0);
  pacer.observe(16, 16, 10.0);
  CHECK(pacer.cap() == 16);  // never below the floor
  for (int i = 0; i < 20; ++i) pacer.observe(16, pacer.cap(), 0.005);  // prompt tokens looked free
  CHECK(pacer.cap() == 256);  // never above the ceiling
  PrefillPacer clamped(1000, 16, 256);
  CHECK(clamped.cap() == 256);
}

}  // namespace
}  // namespace sluice::engine
