// attention_kernel_impl.h built for the avx512 path (flags in backends/CMakeLists.txt).
// GCC 12's AVX-512 intrinsics headers trip -W(maybe-)uninitialized (a false positive
// on their own undefined-vector placeholders).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backends/cpu/attention_kernel_impl.h"

namespace sluice::backends::cpu {

AttentionKernel avx512_attention_kernel() { return attend; }

}  // namespace sluice::backends::cpu
