// A shutdown stops a model load between tensors, on the loading thread only.
#include "engine/loader/load_stop.h"

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

#include "backends/backend.h"
#include "engine/loader/weight_source.h"
#include "engine/models/model.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::engine::unit_engine_loader_test_load_stop {
namespace {

const std::string kLlama = std::string(SLUICE_FIXTURES_DIR) + "/models/llama/llama-f32.gguf";

TEST_CASE("a set stop flag stops a model load at its next tensor; other threads load on") {
  auto backend = backends::make_cpu_backend(1);
  std::atomic<bool> stop{false};
  {
    loader::LoadStopScope scope(stop);
    CHECK_NOTHROW(Model::load(loader::open_weights(kLlama), *backend));  // flag clear: loads
    stop = true;
    CHECK_THROWS_AS(Model::load(loader::open_weights(kLlama), *backend), loader::LoadStopped);
    // A thread with no scope of its own is not stopped by this one's flag.
    bool other_loaded = false;
    std::thread other([&] { other_loaded = Model::load(loader::open_weights(kLlama), *backend) != nullptr; });
    other.join();
    CHECK(other_loaded);
  }
  CHECK_NOTHROW(Model::load(loader::open_weights(kLlama), *backend));  // the scope is over
}

}  // namespace
}  // namespace sluice::engine
