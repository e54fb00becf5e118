// AVX2 + FMA + F16C integer kernels (kernels_avx2_impl.h), for CPUs without VNNI.
#include "backends/cpu/quant/kernels_avx2_impl.h"

namespace sluice::backends::cpu {

const QuantKernels& avx2_quant_kernels() {
  static const QuantKernels kernels{quantize_rows_portable, avx2::group_gemm};
  return kernels;
}

}  // namespace sluice::backends::cpu
