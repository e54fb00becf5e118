// conv_panel_kernel_impl.h built for the avx512 path (flags in backends/CMakeLists.txt).
#include "backends/cpu/conv_panel_kernel_impl.h"

namespace sluice::backends::cpu {

ConvPanelTile avx512_conv_panel_tile() { return conv_panel_tile_impl; }

}  // namespace sluice::backends::cpu
