#pragma once
// The CUDA backend's public face: the only header outside backends/cuda/ that
// mentions CUDA, and it needs no CUDA headers itself.
#include <memory>
#include <string>

#include "backends/backend.h"

namespace sluice::backends {

// A backend on CUDA device `device`. Throws cuda::CudaError naming the CUDA error
// when the device cannot be initialised.
std::unique_ptr<Backend> make_cuda_backend(int device);

namespace cuda {
// Devices the driver reports; 0 (with the CUDA error name in `why`) when it reports
// none or fails, as on a machine without a GPU or driver.
int device_count(std::string* why);
}  // namespace cuda

}  // namespace sluice::backends
