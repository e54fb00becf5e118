// snake_row_impl.h built for the avx512 path (flags in backends/CMakeLists.txt).
#include "backends/cpu/snake_row_impl.h"

namespace sluice::backends::cpu {

SnakeRow avx512_snake_row() { return snake_row_impl; }

}  // namespace sluice::backends::cpu
