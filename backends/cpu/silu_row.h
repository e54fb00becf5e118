#pragma once
// SwiGLU's row: y = g / (1 + expf(-g)) * u with libm's expf bits on every path
// (exp_approx.h's silu_times_row_impl), built per ISA so its double-precision exp
// vectorizes; ops_elementwise.cpp picks the one of the active kernel path.
#include <cstdint>

namespace sluice::backends::cpu {

using SiluRow = void (*)(const float* g, const float* u, float* y, int64_t n);

SiluRow avx2_silu_row();
SiluRow avx512_silu_row();

}  // namespace sluice::backends::cpu
