#include "tests/unit/fixtures_dir.h"

namespace sluice::test {

const char* fixtures_dir() { return SLUICE_FIXTURES_PATH; }

}  // namespace sluice::test
