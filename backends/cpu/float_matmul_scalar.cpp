// float_matmul_impl.h built for the scalar path (flags in backends/CMakeLists.txt).
#include "backends/cpu/float_matmul_impl.h"

namespace sluice::backends::cpu {

FloatMatmulTile scalar_float_matmul_tile() { return float_tile; }

}  // namespace sluice::backends::cpu
