#pragma once
// Which backends this build has, and how a model's `backend` setting picks one:
//   cpu       the CPU backend
//   cuda      CUDA device 0;  cuda:N  device N
//   auto      CUDA device 0 when this build has CUDA and a device is present, else cpu
#include <memory>
#include <string>
#include <string_view>

#include "backends/backend.h"

namespace sluice::backends {

struct BackendSpec {
  DeviceKind kind = DeviceKind::cpu;
  int device_index = 0;

  std::string name() const;  // "cpu", "cuda:0"
};

// Resolves a setting against this build and this machine. Throws
// std::invalid_argument naming the setting and why it cannot be used (unknown
// name, a build without CUDA, no such device, and the CUDA error when the driver
// reports one).
BackendSpec resolve_backend(std::string_view setting);

// Creates the backend; `cpu_threads` is the CPU backend's compute threads (0: one
// per core). Throws std::invalid_argument for a kind this binary lacks (use
// resolve_backend first), std::runtime_error (with the CUDA error name) when a
// device cannot be initialised.
std::unique_ptr<Backend> make_backend(const BackendSpec& spec, int cpu_threads = 0);

// Whether this binary was built with the CUDA backend (-DSLUICE_CUDA=ON).
bool built_with_cuda();

// CUDA devices visible to this process: 0 in a build without CUDA, or when the
// driver reports none or fails (then `why`, if given, gets the CUDA error name).
int cuda_device_count(std::string* why = nullptr);

}  // namespace sluice::backends
