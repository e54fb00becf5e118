// attention_kernel_impl.h built for the avx2 path (flags in backends/CMakeLists.txt).
#include "backends/cpu/attention_kernel_impl.h"

namespace sluice::backends::cpu {

AttentionKernel avx2_attention_kernel() { return attend; }

}  // namespace sluice::backends::cpu
