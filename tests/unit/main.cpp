// The doctest runner for every unit test under tests/unit/. After the run it lists
// the tests that skipped themselves for a missing GPU or model file, so a green run
// without them says so.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/unit/prerequisites.h"

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;  // --help, --list-test-cases, ...
  sluice::testing::print_skip_summary();
  return result;
}
