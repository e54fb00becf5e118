#pragma once
// Which CPU kernel path this process runs: chosen once, at first use, from CPUID
// (x86-64) and the OS's saved-register support, or forced with the environment
// variable SLUICE_CPU_KERNELS=scalar|avx2|avx2-vnni|avx512-vnni (tests and
// benchmarks compare paths with it; a path the CPU cannot run is refused), or
// SLUICE_CPU_KERNELS=f32: no activation quantization at all, weights expanded to
// F32 (the reference numerics the parity goldens are checked with; slow).
// Nothing in this header is x86-specific: other architectures get `scalar`.
#include <string_view>
#include <vector>

namespace sluice::backends::cpu {

enum class KernelPath {
  f32,          // reference: F32 activations against weights dequantized to F32
  scalar,       // portable C++, any architecture
  avx2,         // AVX2 + FMA + F16C (Haswell, Zen 1+)
  avx2_vnni,    // AVX2 + AVX-VNNI (Alder Lake, Zen 5 client)
  avx512_vnni,  // AVX-512 F/BW/VL + VNNI (Ice Lake, Sapphire Rapids, Zen 4+)
};

std::string_view kernel_path_name(KernelPath path);

// Every integer path this CPU can run, scalar first and the fastest last (f32,
// which every CPU runs, is not among them: it is only ever asked for).
std::vector<KernelPath> runnable_kernel_paths();

// The path in use: SLUICE_CPU_KERNELS if set (and runnable), else the fastest.
KernelPath active_kernel_path();

}  // namespace sluice::backends::cpu
