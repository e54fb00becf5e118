#pragma once
// Unaligned load of a GCC/Clang float vector (any width) for the kernels compiled
// once per ISA; memcpy lowers to one vector load on each. Always inlined, never
// across a call, so the ABI note GCC gives for wide vector returns is moot.
#include <cstring>

#pragma GCC diagnostic ignored "-Wpsabi"

namespace sluice::backends::cpu {
namespace {

template <class Vector>
inline Vector load_vector(const float* p) {
  Vector v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace
}  // namespace sluice::backends::cpu
