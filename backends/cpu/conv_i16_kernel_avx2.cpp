// conv_i16_kernel_impl.h built for the avx2 path (flags in backends/CMakeLists.txt).
#include "backends/cpu/conv_i16_kernel_impl.h"

namespace sluice::backends::cpu {

ConvI16Tile avx2_conv_i16_tile() { return conv_i16_tile_impl; }

}  // namespace sluice::backends::cpu
