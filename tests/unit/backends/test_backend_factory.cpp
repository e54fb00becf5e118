// The `backend` setting: resolve_backend against this build and this machine, the
// names BackendSpec gives, and make_backend. The expectations branch on what the
// machine has (built_with_cuda(), cuda_device_count()), so the test holds on a
// CPU-only build, on a CUDA build without a device (CI) and on a GPU machine.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "backends/backend_factory.h"

namespace sluice::backends::unit_backends_test_backend_factory {
namespace {

// The message of the std::invalid_argument that resolve_backend(setting) throws;
// fails the test when it throws nothing or something else.
std::string resolve_error(const std::string& setting) {
  try {
    const BackendSpec spec = resolve_backend(setting);
    FAIL_CHECK("resolve_backend('" << setting << "') returned " << spec.name() << " instead of throwing");
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("resolve_backend('" << setting << "') threw something other than invalid_argument: " << e.what());
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("backend factory: BackendSpec names") {
  CHECK(BackendSpec{}.name() == "cpu");
  CHECK(BackendSpec{DeviceKind::cpu, 0}.name() == "cpu");
  CHECK(BackendSpec{DeviceKind::cuda, 0}.name() == "cuda:0");
  CHECK(BackendSpec{DeviceKind::cuda, 3}.name() == "cuda:3");
}

TEST_CASE("backend factory: cpu and auto") {
  const BackendSpec cpu = resolve_backend("cpu");
  CHECK(cpu.kind == DeviceKind::cpu);
  CHECK(cpu.name() == "cpu");

  std::string why;
  const int devices = cuda_device_count(&why);
  CHECK(devices >= 0);
  if (!built_with_cuda()) {
    CHECK(devices == 0);
    CHECK(why == "built without CUDA");
  }
  const BackendSpec automatic = resolve_backend("auto");
  if (devices == 0) {
    CHECK(automatic.kind == DeviceKind::cpu);
    CHECK(automatic.name() == "cpu");
  } else {
    CHECK(automatic.kind == DeviceKind::cuda);
    CHECK(automatic.device_index == 0);
    CHECK(automatic.name() == "cuda:0");
  }
  const std::string build = built_with_cuda() ? "CUDA build" : "built without CUDA";
  MESSAGE("backend 'auto' resolves to " << automatic.name() << " here (" << build << ", " << devices
                                        << " CUDA device(s)" << (why.empty() ? std::string() : ": " + why) << ")");
}

TEST_CASE("backend factory: cuda and cuda:N against this build and machine") {
  std::string why;
  const int devices = cuda_device_count(&why);
  if (devices == 0) {
    // Why it cannot be used: the build, or the machine (with the CUDA error name).
    for (const std::string setting : {"cuda", "cuda:0", "cuda:1"}) {
      CAPTURE(setting);
      const std::string error = resolve_error(setting);
      CHECK(contains(error, "'" + setting + "'"));
      if (built_with_cuda()) {
        CHECK(contains(error, "no CUDA device"));
        if (!why.empty()) CHECK(contains(error, why));
      } else {
        CHECK(contains(error, "built without CUDA"));
      }
    }
  } else {
    const BackendSpec cuda = resolve_backend("cuda");
    CHECK(cuda.kind == DeviceKind::cuda);
    CHECK(cuda.device_index == 0);
    CHECK(resolve_backend("cuda:0").name() == "cuda:0");
    const BackendSpec last = resolve_backend("cuda:" + std::to_string(devices - 1));
    CHECK(last.device_index == devices - 1);
    const std::string error = resolve_error("cuda:" + std::to_string(devices));
    CHECK(contains(error, "does not exist"));
  }
  // A device index beyond any machine's: refused whatever the build and machine.
  const std::string error = resolve_error("cuda:99");
  CHECK(contains(error, "'cuda:99'"));
  if (!built_with_cuda()) CHECK(contains(error, "built without CUDA"));
  else if (devices == 0) CHECK(contains(error, "no CUDA device"));
  else CHECK(contains(error, "does not exist"));
}

TEST_CASE("backend factory: malformed settings name the setting and the accepted values") {
  for (const std::string setting : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda0", "CPU", "", " cpu", "metal"}) {
    CAPTURE(setting);
    const std::string error = resolve_error(setting);
    CHECK(contains(error, "'" + setting + "'"));
    CHECK(contains(error, "auto"));
    CHECK(contains(error, "cuda:N"));
  }
}

TEST_CASE("backend factory: make_backend") {
  auto cpu = make_backend(resolve_backend("cpu"), 1);
  REQUIRE(cpu);
  CHECK(cpu->name() == "cpu");
  CHECK(cpu->device() == DeviceKind::cpu);

  auto automatic = make_backend(resolve_backend("auto"), 1);
  REQUIRE(automatic);
  CHECK(automatic->name() == resolve_backend("auto").name());

  if (!built_with_cuda()) {
    // A spec made by hand for a backend this binary lacks is refused, naming it.
    try {
      make_backend(BackendSpec{DeviceKind::cuda, 0});
      FAIL_CHECK("make_backend(cuda:0) succeeded in a build without CUDA");
    } catch (const std::exception& e) {
      CHECK(contains(e.what(), "cuda:0"));
    }
  } else if (cuda_device_count() > 0) {
    auto cuda = make_backend(resolve_backend("cuda"));
    REQUIRE(cuda);
    CHECK(cuda->name() == "cuda:0");
    CHECK(cuda->device() == DeviceKind::cuda);
  }
}

}  // namespace sluice::backends
