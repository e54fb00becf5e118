#pragma once
// Tensors under the names their checkpoint publishes ("talker.model.layers.0.
// self_attn.q_proj.weight"), in their stored dtype and shape: how the loaders of
// models with a layout of their own (Qwen3-TTS and its codec) read weights, where
// the text models' WeightSource renames everything to GGUF names.
//
// require() is the one way a loader takes a tensor it needs: it checks presence and
// shape and throws LoadError naming the file and the tensor. A random set (for
// benchmarks at real shapes) makes whatever tensor is required, so the same loader
// code runs on a checkpoint and on synthetic weights. Immutable after open: any
// thread may read it (the random set guards what it makes).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/dtype.h"
#include "engine/loader/weight_source.h"

namespace sluice::loader {

class TensorSet {
 public:
  virtual ~TensorSet() = default;
  // The folder (or "random:<name>"), for messages.
  virtual const std::filesystem::path& path() const = 0;
  // The tensor as stored, or nullopt when absent. Views stay valid while the set lives.
  virtual std::optional<WeightView> find(std::string_view name) const = 0;
  // The file that holds `name` (the folder when unknown), for messages.
  virtual std::filesystem::path file_of(std::string_view name) const = 0;
  // Every tensor name, sorted (a random set lists the ones made so far).
  virtual std::vector<std::string> names() const = 0;

  // The tensor with exactly this shape (any dtype); throws LoadError naming the
  // file and the tensor when it is missing or has another shape.
  virtual WeightView require(std::string_view name, std::span<const int64_t> shape) const;
  WeightView require(std::string_view name, std::initializer_list<int64_t> shape) const {
    return require(name, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  // The same, widened to F32 (F32, F16 or BF16 stored; LoadError for another dtype).
  std::vector<float> require_f32(std::string_view name, std::span<const int64_t> shape) const;
  std::vector<float> require_f32(std::string_view name, std::initializer_list<int64_t> shape) const {
    return require_f32(name, std::span<const int64_t>(shape.begin(), shape.size()));
  }
  // A LoadError naming the file that holds `name` and the tensor, with `reason`.
  [[noreturn]] void fail(std::string_view name, const std::string& reason) const;
};

// The safetensors files of a folder (model.safetensors, or the shards of
// model.safetensors.index.json). Throws LoadError naming the folder or file.
std::unique_ptr<TensorSet> open_tensor_set(const std::filesystem::path& dir);

}  // namespace sluice::loader
