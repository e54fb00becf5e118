#pragma once
// Tests whose prerequisite is missing (a CUDA device, a real model file that
// `make test-models` fetches) must not pass silently. has_prerequisite() reports
// such a test as skipped, with a MESSAGE and a line in the run's closing summary,
// and the caller returns. When the run requires that kind of prerequisite
// (SLUICE_REQUIRE_MODELS=1, which `make test` sets after fetching the models;
// SLUICE_REQUIRE_GPU=1 on a GPU runner), the test fails instead.
#include <filesystem>
#include <string>

namespace sluice::testing {

enum class Prerequisite { model_file, gpu };

// True when the test can go on; `what` names the test, `why` says what is missing.
bool has_prerequisite(Prerequisite kind, bool available, const std::string& what, const std::string& why);

// has_prerequisite for a real model file; `fetch` says what fetches it.
bool has_model_file(const std::filesystem::path& path, const std::string& what,
                    const std::string& fetch = "make test-models");

// Prints the tests skipped at run time (none: nothing). Called by main after the run.
void print_skip_summary();

}  // namespace sluice::testing
