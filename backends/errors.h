#pragma once
// Errors a backend reports in a way the engine can act on, whatever the device.
#include <stdexcept>
#include <string>

namespace sluice::backends {

// An allocation the device could not satisfy. The message names the device, the
// size asked for and the memory free at the time.
class OutOfMemoryError : public std::runtime_error {
 public:
  explicit OutOfMemoryError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace sluice::backends
