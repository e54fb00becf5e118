// float_matmul_impl.h built for the avx2 path (flags in backends/CMakeLists.txt).
#include "backends/cpu/float_matmul_impl.h"

namespace sluice::backends::cpu {

FloatMatmulTile avx2_float_matmul_tile() { return float_tile; }

}  // namespace sluice::backends::cpu
