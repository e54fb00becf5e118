// AVX2 + AVX-VNNI integer kernels (kernels_avx2_impl.h with vpdpbusd).
#define SLUICE_AVX_VNNI 1
#include "backends/cpu/quant/kernels_avx2_impl.h"

namespace sluice::backends::cpu {

const QuantKernels& avx2_vnni_quant_kernels() {
  static const QuantKernels kernels{quantize_rows_portable, avx2::group_gemm};
  return kernels;
}

}  // namespace sluice::backends::cpu
