// attention_kernel_impl.h built for the avx512 path (flags in backends/CMakeLists.txt).
#include "backends/cpu/attention_kernel_impl.h"

namespace sluice::backends::cpu {

AttentionKernel avx512_attention_kernel() { return attend; }

}  // namespace sluice::backends::cpu
