// conv_i16_kernel_impl.h built for the avx512-vnni path (flags in backends/CMakeLists.txt).
// GCC 12's AVX-512 intrinsics headers trip -Wmaybe-uninitialized (a false positive
// on their own undefined-vector placeholders).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "backends/cpu/conv_i16_kernel_impl.h"

namespace sluice::backends::cpu {

ConvI16Tile avx512_conv_i16_tile() { return conv_i16_tile_impl; }

}  // namespace sluice::backends::cpu
