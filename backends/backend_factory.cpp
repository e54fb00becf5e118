#include "backends/backend_factory.h"

#include <algorithm>
#include <stdexcept>

#ifdef SLUICE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

namespace sluice::backends {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && s.size() <= 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

BackendSpec cuda_spec(std::string_view setting, int index) {
  if (!built_with_cuda())
    throw std::invalid_argument("backend '" + std::string(setting) +
                                "': this binary was built without CUDA (rebuild with -DSLUICE_CUDA=ON)");
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0)
    throw std::invalid_argument("backend '" + std::string(setting) + "': no CUDA device" +
                                (why.empty() ? std::string() : " (" + why + ")"));
  if (index >= count)
    throw std::invalid_argument("backend '" + std::string(setting) + "': device " + std::to_string(index) +
                                " does not exist (" + std::to_string(count) + " CUDA device" +
                                (count == 1 ? "" : "s") + " visible)");
  return {DeviceKind::cuda, index};
}

}  // namespace

std::string BackendSpec::name() const {
  switch (kind) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::cuda: return "cuda:" + std::to_string(device_index);
    case DeviceKind::metal: return "metal";
  }
  return "?";
}

BackendSpec resolve_backend(std::string_view setting) {
  if (setting == "cpu") return {DeviceKind::cpu, 0};
  if (setting == "auto") return cuda_device_count() > 0 ? BackendSpec{DeviceKind::cuda, 0} : BackendSpec{};
  if (setting == "cuda") return cuda_spec(setting, 0);
  if (setting.starts_with("cuda:") && all_digits(setting.substr(5)))
    return cuda_spec(setting, std::stoi(std::string(setting.substr(5))));
  throw std::invalid_argument("invalid backend '" + std::string(setting) + "' (expected auto, cpu, cuda or cuda:N)");
}

std::unique_ptr<Backend> make_backend(const BackendSpec& spec, int cpu_threads) {
  switch (spec.kind) {
    case DeviceKind::cpu: return make_cpu_backend(cpu_threads);
    case DeviceKind::cuda:
#ifdef SLUICE_CUDA
      return make_cuda_backend(spec.device_index);
#else
      break;
#endif
    case DeviceKind::metal: break;
  }
  throw std::invalid_argument("backend '" + spec.name() + "' is not built into this binary");
}

bool built_with_cuda() {
#ifdef SLUICE_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count(std::string* why) {
#ifdef SLUICE_CUDA
  return cuda::device_count(why);
#else
  if (why) *why = "built without CUDA";
  return 0;
#endif
}

}  // namespace sluice::backends
