#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "backends/dtype.h"
#include "engine/loader/tensor_set.h"

namespace sluice::loader {

// Synthetic weights: require() makes any tensor asked for, filled with random
// values of `dtype` (F32, F16 or BF16), the same bytes for the same (seed, name,
// shape): tensors of 2 or more dimensions hold values of size about
// 1/sqrt(fan-in) with random signs (fan-in = all but the first dimension), 1-D
// tensors values in [1, 2) (a norm, a bias, a positive count). Only the shapes are
// real; the numbers mean nothing beyond staying finite.
std::unique_ptr<TensorSet> make_random_tensor_set(std::string name, backends::DType dtype, uint64_t seed);

}  // namespace sluice::loader
