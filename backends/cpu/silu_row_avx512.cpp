// silu_row.h built for AVX-512 (flags in backends/CMakeLists.txt).
#include "backends/cpu/exp_approx.h"
#include "backends/cpu/silu_row.h"

namespace sluice::backends::cpu {

SiluRow avx512_silu_row() { return silu_times_row_impl; }

}  // namespace sluice::backends::cpu
