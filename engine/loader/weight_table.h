#pragma once
// Pieces shared by the GGUF and safetensors weight sources: the name → view table
// with the F32 copies some tensors need, F16/BF16 → F32 conversion, and the one
// consistency check of ModelHparams. Internal to engine/loader.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/dtype.h"
#include "engine/loader/weight_source.h"
#include "engine/models/hparams.h"

namespace sluice::loader::detail {

// The tensors of one source by GGUF name. Views point into a mapping the source
// owns, or into the F32 copies kept here (1-D tensors converted or shifted, data too
// misaligned to hand out). Filled while opening, then read-only.
class WeightTable {
 public:
  // False when `name` is already present.
  bool add_view(std::string name, WeightView view);
  bool add_f32(std::string name, std::vector<int64_t> shape, std::vector<float> values);
  // The view's bytes copied into storage aligned for any element type.
  bool add_copy(std::string name, WeightView view);
  void erase(std::string_view name);

  std::optional<WeightView> find(std::string_view name) const;
  bool contains(std::string_view name) const { return views_.find(name) != views_.end(); }
  size_t size() const { return views_.size(); }

 private:
  std::map<std::string, WeightView, std::less<>> views_;
  std::vector<std::unique_ptr<std::vector<float>>> owned_;  // stable addresses
};

float f16_to_f32(uint16_t bits);
float bf16_to_f32(uint16_t bits);

// `num_elements` of F32, F16 or BF16 (little-endian, possibly unaligned) as floats;
// nullopt for other dtypes or when `bytes` is too short.
std::optional<std::vector<float>> to_f32(backends::DType dtype, std::span<const std::byte> bytes,
                                         uint64_t num_elements);

// Where each hparam came from, so an error names the key an operator can look up:
// "llama.attention.head_count" for GGUF, "num_attention_heads" for config.json.
struct HparamKeys {
  std::string vocab_size;
  std::string context_length;
  std::string embedding_length;
  std::string num_layers;
  std::string num_heads;
  std::string num_kv_heads;
  std::string head_dim;
  std::string ffn_length;
  std::string norm_eps;
  std::string rope_dims;
  std::string rope_theta;
  std::string rope_scaling;
  std::string rope_local_theta;
  std::string sliding_window;
  std::string sliding_window_pattern;
  std::string attention_scale;
  std::string softcap;
};

// Throws LoadError naming `path` and the key of the first field that is out of
// range or inconsistent with another.
void check_hparams(const std::filesystem::path& path, const engine::ModelHparams& hparams,
                   const HparamKeys& keys);

// Period N of a per-layer "is sliding" list in the Gemma 3 form (every Nth layer,
// 1-based, global); num_layers + 1 when every layer slides, 0 when none does;
// nullopt when the list has no such period.
std::optional<int32_t> sliding_pattern_of(const std::vector<bool>& is_sliding);

}  // namespace sluice::loader::detail
