#include "backends/cuda/cuda_error.h"

#include <cstdio>
#include <cstdlib>

namespace sluice::backends::cuda {

CudaError::CudaError(const std::string& what, cudaError_t code) : std::runtime_error(what), code_(code) {}

std::string error_text(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + " (" + cudaGetErrorString(code) + ")";
}

std::string error_text(cublasStatus_t status) { return cublasGetStatusName(status); }

void throw_if_failed(cudaError_t code, const std::string& what) {
  if (code == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  if (code == cudaErrorMemoryAllocation) throw OutOfMemoryError(what + ": " + error_text(code));
  throw CudaError(what + ": " + error_text(code), code);
}

void throw_if_failed(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemoryError(what + ": " + error_text(status));
  throw CudaError(what + ": " + error_text(status), cudaErrorUnknown);
}

void die(const char* file, int line, const char* what, const std::string& error) {
  std::fprintf(stderr, "%s:%d: CUDA failure in %s: %s\n", file, line, what, error.c_str());
  std::abort();
}

}  // namespace sluice::backends::cuda
