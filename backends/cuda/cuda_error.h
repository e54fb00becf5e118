#pragma once
// CUDA and cuBLAS failures. Set-up calls (device, allocation, handles) throw
// CudaError with the error's name, so start-up failures are reported and the
// daemon exits cleanly; a failure inside a step (a kernel launch, a copy) is a
// broken device or a bug, and stops the process with the name, like SLUICE_CHECK.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "backends/errors.h"

namespace sluice::backends::cuda {

class CudaError : public std::runtime_error {
 public:
  CudaError(const std::string& what, cudaError_t code);
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// "cudaErrorMemoryAllocation (out of memory)"
std::string error_text(cudaError_t code);
std::string error_text(cublasStatus_t status);

// Throws CudaError("<what>: <error>") when code is not cudaSuccess, or
// OutOfMemoryError for an allocation failure.
void throw_if_failed(cudaError_t code, const std::string& what);
void throw_if_failed(cublasStatus_t status, const std::string& what);

// Prints "<file>:<line>: CUDA failure in <what>: <error>" and aborts.
[[noreturn]] void die(const char* file, int line, const char* what, const std::string& error);

}  // namespace sluice::backends::cuda

// For calls inside a step: abort with the error name on failure.
#define SLUICE_CUDA_CHECK(call)                                                           \
  do {                                                                                    \
    const cudaError_t sluice_cuda_status_ = (call);                                       \
    if (sluice_cuda_status_ != cudaSuccess) [[unlikely]]                                  \
      ::sluice::backends::cuda::die(__FILE__, __LINE__, #call,                            \
                                    ::sluice::backends::cuda::error_text(sluice_cuda_status_)); \
  } while (0)

#define SLUICE_CUBLAS_CHECK(call)                                                         \
  do {                                                                                    \
    const cublasStatus_t sluice_cublas_status_ = (call);                                  \
    if (sluice_cublas_status_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                      \
      ::sluice::backends::cuda::die(__FILE__, __LINE__, #call,                            \
                                    ::sluice::backends::cuda::error_text(sluice_cublas_status_)); \
  } while (0)

// After a kernel launch: a bad configuration shows up here, not at the next sync.
#define SLUICE_CUDA_LAUNCH_CHECK() SLUICE_CUDA_CHECK(cudaGetLastError())
