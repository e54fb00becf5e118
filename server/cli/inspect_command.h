#pragma once
// `sluice inspect MODEL`: prints what the GGUF reader sees in a model file, and the
// registration check the daemon would run on it, without starting anything.
#include <string>

namespace sluice::server {

// Returns the process exit code: 0 when the file is valid and servable.
int run_inspect(const std::string& path, bool show_tensors);

}  // namespace sluice::server
