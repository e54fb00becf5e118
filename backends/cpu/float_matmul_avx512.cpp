// float_matmul_impl.h built for the avx512 path (flags in backends/CMakeLists.txt).
// GCC 12's AVX-512 intrinsics headers trip -W(maybe-)uninitialized (a false positive
// on their own undefined-vector placeholders).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backends/cpu/float_matmul_impl.h"

namespace sluice::backends::cpu {

FloatMatmulTile avx512_float_matmul_tile() { return float_tile; }

}  // namespace sluice::backends::cpu
