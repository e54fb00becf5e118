#pragma once
// A model's tensors under their GGUF names ("token_embd.weight",
// "blk.3.attn_q.weight", "output_norm.weight"), whatever file they came from, plus
// its hyperparameters. Model code reads weights only through this interface.
//
// Every source hands out weights the way GGUF has them, so models need one code
// path: matrices [out, in] row-major in their stored dtype (quantized stays
// quantized); 1-D tensors (norms, biases) as F32, Gemma's norms already with the
// +1 folded in. One difference is declared rather than undone: GGUF llama files
// store q/k permuted for GGML's "normal" RoPE, while Hugging Face safetensors use
// the NeoX layout; each source sets hparams().rope.neox to match its weights.
// Immutable after open: any thread may read it.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/dtype.h"
#include "engine/models/hparams.h"

namespace sluice::loader {

struct WeightView {
  backends::DType dtype = backends::DType::F32;
  std::vector<int64_t> shape;        // row-major: [out, in] for a matrix
  std::span<const std::byte> data;   // valid while the source lives
};

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  virtual const std::filesystem::path& path() const = 0;
  virtual const engine::ModelHparams& hparams() const = 0;
  virtual std::optional<WeightView> find(std::string_view gguf_name) const = 0;
  // Throws LoadError naming the file and the tensor when it is missing, or when
  // its dtype or shape differ from what is expected (empty `shape`: any).
  WeightView require(std::string_view gguf_name, std::span<const int64_t> shape) const;
};

// GGUF file (mmap, no copy).  Throws LoadError.
std::unique_ptr<WeightSource> open_gguf_weights(const std::filesystem::path& path);
// Hugging Face layout: a folder with config.json and model.safetensors, or
// model.safetensors.index.json with its shards.  Throws LoadError.
std::unique_ptr<WeightSource> open_safetensors_weights(const std::filesystem::path& dir);
// Either, by looking at the path.
std::unique_ptr<WeightSource> open_weights(const std::filesystem::path& path);

}  // namespace sluice::loader
