// float_matmul_impl.h built for the avx512 path (flags in backends/CMakeLists.txt).
#include "backends/cpu/float_matmul_impl.h"

namespace sluice::backends::cpu {

FloatMatmulTile avx512_float_matmul_tile() { return float_tile; }

}  // namespace sluice::backends::cpu
