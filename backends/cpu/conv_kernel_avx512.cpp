// conv_kernel_impl.h built for the avx512 path (flags in backends/CMakeLists.txt).
#include "backends/cpu/conv_kernel_impl.h"

namespace sluice::backends::cpu {

ConvTile avx512_conv_tile() { return conv_tile_impl; }

}  // namespace sluice::backends::cpu
