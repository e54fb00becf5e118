#pragma once
// Where the committed test fixtures are (tests/fixtures of this checkout). Only
// fixtures_dir.cpp is compiled with the checkout's absolute path: a path in every test
// file's command line would make ccache miss on all of them in a clone in another
// folder (CI's), where CCACHE_BASEDIR makes every other path relative.
#include <string>

namespace sluice::test {
const char* fixtures_dir();
// The bytes of tests/fixtures/<relative>; throws std::runtime_error naming the file
// when it cannot be read (a test reports that as its failure).
std::string read_fixture(const std::string& relative);
}  // namespace sluice::test

#define SLUICE_FIXTURES_DIR (::sluice::test::fixtures_dir())
