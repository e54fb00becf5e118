// A probe for tests/e2e/test_prerequisites.py, which runs it with --no-skip: a
// missing model file is a reported skip, or a failure under SLUICE_REQUIRE_MODELS=1.
// Skipped in ordinary runs (it is about the harness, not sluice).
#include <doctest/doctest.h>

#include "tests/unit/prerequisites.h"

namespace unit_test_prerequisites {

TEST_CASE("prerequisites: probe with a model file that does not exist" * doctest::skip()) {
  const bool present = sluice::testing::has_model_file("/nonexistent/sluice-probe.gguf", "prerequisite probe");
  CHECK_FALSE(present);
}
}  // namespace unit_test_prerequisites
