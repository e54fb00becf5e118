#pragma once
// Synthetic models: a WeightSource with the tensors of a llama / qwen3 model of a
// given shape, filled with random values, so a model can be benchmarked at real
// size without downloading it (`sluice bench`). Model::load takes it unchanged.
//
// The values are random but valid for their format, so every forward pass stays
// finite: matrices hold small values (|x| around 1/sqrt(in), random sign); block
// formats hold random quant bytes under small finite F16 scales; norm weights are
// 1. The numbers mean nothing; only the shapes, dtypes and bytes are real.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/dtype.h"
#include "engine/loader/weight_source.h"
#include "engine/models/hparams.h"

namespace sluice::loader {

struct RandomModelSpec {
  std::string name;                 // shown in path(): "random:<name>"
  engine::ModelHparams hparams;     // as a GGUF reader would fill them
  backends::DType matrix_dtype = backends::DType::BF16;  // every matrix; norms are F32
};

// Presets of real models' shapes: "llama3-8b" (Llama 3.1 8B, llama3 RoPE scaling),
// "qwen3-8b", and "tiny" (2 layers, d 256) for tests. Throws std::invalid_argument
// for another name, listing these.
RandomModelSpec random_model_preset(std::string_view name);
std::vector<std::string_view> random_model_presets();

// The matrix dtypes make_random_weights fills: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K.
bool random_weights_support(backends::DType dtype);

// One tensor of the synthetic model, in the order they are laid out.
struct RandomTensor {
  std::string name;          // GGUF name: "blk.0.attn_q.weight"
  backends::DType dtype;
  std::vector<int64_t> shape;  // row-major [out, in], or [n] for a norm
  uint64_t bytes = 0;
};

// Every tensor the spec's model has (what Model::load will ask for). Throws
// LoadError when the hparams are inconsistent, or a matrix row is not a whole
// number of the dtype's blocks.
std::vector<RandomTensor> random_model_tensors(const RandomModelSpec& spec);

// Builds the source, holding its own bytes (the sum of random_model_tensors' bytes,
// so an 8B model in BF16 takes 16 GB of host memory). Filled in parallel with one
// thread per core; the same spec and seed give the same bytes whatever the core
// count. Throws LoadError as random_model_tensors does, std::bad_alloc when memory
// runs out.
std::unique_ptr<WeightSource> make_random_weights(const RandomModelSpec& spec, uint64_t seed);

// Fills `out` (whole elements of `dtype`, any dtype make_random_weights fills) as
// that fills a matrix with rows of `fan_in` elements, from one random stream.
void fill_random_matrix(backends::DType dtype, int64_t fan_in, uint64_t seed, std::span<std::byte> out);

}  // namespace sluice::loader
