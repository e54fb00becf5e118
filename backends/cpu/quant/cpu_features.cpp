#include "backends/cpu/quant/cpu_features.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace sluice::backends::cpu {
namespace {

#if defined(__x86_64__)
struct X86Features {
  bool avx2 = false, fma = false, f16c = false, avx_vnni = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512_vnni = false;
};

// The OS must save the wide registers on context switch (XCR0), or the CPU's
// own flags mean nothing.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

X86Features detect() {
  X86Features f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1;
  const bool fma = (c >> 12) & 1, f16c = (c >> 29) & 1, avx = (c >> 28) & 1;
  if (!osxsave || !avx) return f;
  const uint64_t xcr0 = read_xcr0();
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;
  const bool zmm_saved = (xcr0 & 0xE6) == 0xE6;
  if (!ymm_saved) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = (b >> 5) & 1;
  f.fma = fma;
  f.f16c = f16c;
  f.avx512f = zmm_saved && ((b >> 16) & 1);
  f.avx512bw = zmm_saved && ((b >> 30) & 1);
  f.avx512vl = zmm_saved && ((b >> 31) & 1);
  f.avx512_vnni = zmm_saved && ((c >> 11) & 1);
  __cpuid_count(7, 1, a, b, c, d);
  f.avx_vnni = (a >> 4) & 1;
  return f;
}
#endif

KernelPath choose() {
  const std::vector<KernelPath> paths = runnable_kernel_paths();
  if (const char* forced = std::getenv("SLUICE_CPU_KERNELS"); forced && *forced) {
    if (kernel_path_name(KernelPath::f32) == forced) return KernelPath::f32;
    for (KernelPath p : paths)
      if (kernel_path_name(p) == forced) return p;
    std::fprintf(stderr, "SLUICE_CPU_KERNELS=%s is not a kernel path this CPU runs; using %s\n", forced,
                 std::string(kernel_path_name(paths.back())).c_str());
  }
  return paths.back();
}

}  // namespace

std::string_view kernel_path_name(KernelPath path) {
  switch (path) {
    case KernelPath::f32: return "f32";
    case KernelPath::scalar: return "scalar";
    case KernelPath::avx2: return "avx2";
    case KernelPath::avx2_vnni: return "avx2-vnni";
    case KernelPath::avx512_vnni: return "avx512-vnni";
  }
  return "?";
}

std::vector<KernelPath> runnable_kernel_paths() {
  std::vector<KernelPath> paths{KernelPath::scalar};
#if defined(__x86_64__) && defined(SLUICE_X86_KERNELS)
  const X86Features f = detect();
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  if (avx2) paths.push_back(KernelPath::avx2);
  if (avx2 && f.avx_vnni) paths.push_back(KernelPath::avx2_vnni);
  if (avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni) paths.push_back(KernelPath::avx512_vnni);
#endif
  return paths;
}

KernelPath active_kernel_path() {
  static const KernelPath path = choose();
  return path;
}

}  // namespace sluice::backends::cpu
