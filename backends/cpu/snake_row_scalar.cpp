// snake_row_impl.h built for the scalar path (flags in backends/CMakeLists.txt).
#include "backends/cpu/snake_row_impl.h"

namespace sluice::backends::cpu {

SnakeRow scalar_snake_row() { return snake_row_impl; }

}  // namespace sluice::backends::cpu
