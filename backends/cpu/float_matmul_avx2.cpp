// The avx2 path's float matmul tile: float_matmul_avx2_tile.h (flags in
// backends/CMakeLists.txt). The scalar and avx512 paths build float_matmul_impl.h.
#include "backends/cpu/float_matmul_avx2_tile.h"

namespace sluice::backends::cpu {
namespace {

void tile(const FloatMatmulArgs& a, int64_t t_begin, int64_t t_end, int64_t o_begin, int64_t o_end, float* /*scratch*/) {
  avx2_tile::float_tile(a, t_begin, t_end, o_begin, o_end);
}

}  // namespace

FloatMatmulTile avx2_float_matmul_tile() { return tile; }

}  // namespace sluice::backends::cpu
