#include "tests/unit/fixtures_dir.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sluice::test {

const char* fixtures_dir() { return SLUICE_FIXTURES_PATH; }

std::string read_fixture(const std::string& relative) {
  const std::string path = std::string(fixtures_dir()) + "/" + relative;
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace sluice::test
