#pragma once
// Turns weight views that a loader required into backend tensors, checking them on
// the way: matrices in a dtype the backend's matmul takes (optionally quantized at
// load first), 1-D tensors as F32 (a tensor set's F16/BF16 ones widened into
// memory the store owns).
// One binder serves every model: the text models take their views from a
// WeightSource under GGUF names, Qwen3-TTS from a TensorSet under its published
// names; bind_decoder_layers() binds the shared decoder block's tensors for both.
// Used while loading, on one thread.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "engine/loader/weight_source.h"
#include "engine/models/architecture.h"
#include "engine/models/model_weights.h"

namespace sluice::loader {
class TensorSet;
}

namespace sluice::engine {

class WeightBinder {
 public:
  // require(name, shape) returns the checked view or throws LoadError; file_of(name)
  // names the file that holds it, for the binder's own errors.
  using Require = std::function<loader::WeightView(const std::string&, std::span<const int64_t>)>;
  using FileOf = std::function<std::filesystem::path(const std::string&)>;

  WeightBinder(Require require, FileOf file_of, backends::Backend& backend, WeightStore& store,
               std::optional<backends::DType> quantize_to);
  // Views under GGUF names from a text model's source.
  static WeightBinder for_source(const loader::WeightSource& source, backends::Backend& backend, WeightStore& store,
                                 std::optional<backends::DType> quantize_to);
  // Views under published names from a tensor set.
  static WeightBinder for_tensor_set(const loader::TensorSet& set, backends::Backend& backend, WeightStore& store,
                                     std::optional<backends::DType> quantize_to);

  // A matrix [rows, cols]. keep_q8: quantize to Q8_0 whatever the target (tables
  // that are also read by embed, where 4 bits cost most).
  backends::Tensor matrix(const std::string& name, int64_t rows, int64_t cols, bool keep_q8 = false);
  // A vector [n] as F32 (norm weights, biases); a tensor set's F16 / BF16 ones are
  // widened.
  backends::Tensor vector(const std::string& name, int64_t n);

  backends::Backend& backend() const { return backend_; }

 private:
  backends::Tensor check_size(const std::string& name, std::span<const std::byte> data,
                              const backends::Tensor& tensor) const;
  [[noreturn]] void fail(const std::string& name, const std::string& reason) const;

  Require require_;
  FileOf file_of_;
  backends::Backend& backend_;
  WeightStore& store_;
  std::optional<backends::DType> quantize_to_;
  bool widen_vectors_ = false;  // F16 / BF16 vectors are widened (tensor sets); else refused
};

// The name of layer `layer`'s tensor with GGUF role `role` ("attn_q", "ffn_norm").
using LayerTensorName = std::function<std::string(int64_t layer, std::string_view role)>;
// "blk.N.<role>.weight"
std::string gguf_layer_tensor_name(int64_t layer, std::string_view role);
// Hugging Face llama/qwen3 names under `prefix`: "<prefix>layers.N.self_attn.q_proj.weight".
LayerTensorName hf_layer_tensor_names(std::string prefix);

// hparams.num_layers decoder blocks with the tensors `arch` implies, every one required.
std::vector<LayerWeights> bind_decoder_layers(WeightBinder& bind, const ModelHparams& hparams,
                                              const Architecture& arch, const LayerTensorName& name);

}  // namespace sluice::engine
