#include "engine/loader/weight_table.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

#include "engine/loader/load_error.h"

namespace sluice::loader::detail {
namespace {

using backends::DType;

// Bounds that keep every product of hparams (heads * head_dim * layers, vocab * d)
// far from int64 overflow; real models are orders of magnitude below them.
constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr int64_t kMaxLayers = int64_t{1} << 14;
constexpr int64_t kMaxContext = int64_t{1} << 32;

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& key,
                       const std::string& reason) {
  throw LoadError(path, "hparam '" + key + "' " + reason);
}

void check_count(const std::filesystem::path& path, const std::string& key, int64_t value,
                 int64_t max) {
  if (value <= 0 || value > max)
    fail(path, key, "is " + std::to_string(value) + ", expected 1.." + std::to_string(max));
}

void check_positive(const std::filesystem::path& path, const std::string& key, float value) {
  if (!std::isfinite(value) || value <= 0.0f)
    fail(path, key, "is " + std::to_string(value) + ", expected a finite value > 0");
}

void check_non_negative(const std::filesystem::path& path, const std::string& key, float value) {
  if (!std::isfinite(value) || value < 0.0f)
    fail(path, key, "is " + std::to_string(value) + ", expected a finite value >= 0");
}

void check_rope(const std::filesystem::path& path, const engine::ModelHparams& hp,
                const backends::RopeParams& rope, const HparamKeys& keys,
                const std::string& theta_key) {
  if (rope.num_rotated <= 0 || rope.num_rotated > hp.head_dim || rope.num_rotated % 2 != 0)
    fail(path, keys.rope_dims,
         "is " + std::to_string(rope.num_rotated) + ", expected an even count 2.." +
             std::to_string(hp.head_dim) + " (head_dim)");
  check_positive(path, theta_key, rope.theta);
  check_positive(path, keys.rope_scaling, rope.freq_scale);
  if (rope.llama3_factor != 0.0f) {
    if (!std::isfinite(rope.llama3_factor) || rope.llama3_factor < 1.0f)
      fail(path, keys.rope_scaling, "has llama3 factor " + std::to_string(rope.llama3_factor) +
                                        ", expected >= 1");
    check_non_negative(path, keys.rope_scaling, rope.llama3_low_freq_factor);
    if (!std::isfinite(rope.llama3_high_freq_factor) ||
        !(rope.llama3_high_freq_factor > rope.llama3_low_freq_factor))
      fail(path, keys.rope_scaling, "has llama3 high_freq_factor " +
                                        std::to_string(rope.llama3_high_freq_factor) +
                                        " not above low_freq_factor " +
                                        std::to_string(rope.llama3_low_freq_factor));
    if (rope.llama3_original_context <= 0)
      fail(path, keys.rope_scaling, "has llama3 original context " +
                                        std::to_string(rope.llama3_original_context) +
                                        ", expected > 0");
  }
}

}  // namespace

bool WeightTable::add_view(std::string name, WeightView view) {
  return views_.emplace(std::move(name), std::move(view)).second;
}

bool WeightTable::add_f32(std::string name, std::vector<int64_t> shape, std::vector<float> values) {
  if (contains(name)) return false;
  auto& storage = owned_.emplace_back(std::make_unique<std::vector<float>>(std::move(values)));
  WeightView view;
  view.dtype = DType::F32;
  view.shape = std::move(shape);
  view.data = std::as_bytes(std::span<const float>(*storage));
  return add_view(std::move(name), std::move(view));
}

bool WeightTable::add_copy(std::string name, WeightView view) {
  if (contains(name)) return false;
  auto& storage = owned_.emplace_back(
      std::make_unique<std::vector<float>>((view.data.size() + sizeof(float) - 1) / sizeof(float)));
  if (!view.data.empty()) std::memcpy(storage->data(), view.data.data(), view.data.size());
  view.data = std::as_bytes(std::span<const float>(*storage)).first(view.data.size());
  return add_view(std::move(name), std::move(view));
}

void WeightTable::erase(std::string_view name) {
  if (auto it = views_.find(name); it != views_.end()) views_.erase(it);
}

std::optional<WeightView> WeightTable::find(std::string_view name) const {
  auto it = views_.find(name);
  if (it == views_.end()) return std::nullopt;
  return it->second;
}

float f16_to_f32(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  uint32_t out;
  if (exponent == 0x1F) {
    out = sign | 0x7F800000u | (mantissa << 13);  // inf, nan
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;  // signed zero
  } else {
    // Subnormal: shift the mantissa up until its leading one becomes implicit.
    uint32_t e = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --e;
    }
    out = sign | (e << 23) | ((mantissa & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(out);
}

float bf16_to_f32(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

std::optional<std::vector<float>> to_f32(DType dtype, std::span<const std::byte> bytes,
                                         uint64_t num_elements) {
  const uint64_t width = dtype == DType::F32 ? 4 : (dtype == DType::F16 || dtype == DType::BF16) ? 2 : 0;
  if (width == 0 || num_elements > bytes.size() / width) return std::nullopt;
  std::vector<float> out(num_elements);
  for (uint64_t i = 0; i < num_elements; ++i) {
    const std::byte* p = bytes.data() + i * width;
    if (width == 4) {
      std::memcpy(&out[i], p, 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      out[i] = dtype == DType::F16 ? f16_to_f32(bits) : bf16_to_f32(bits);
    }
  }
  return out;
}

void check_hparams(const std::filesystem::path& path, const engine::ModelHparams& hp,
                   const HparamKeys& keys) {
  check_count(path, keys.vocab_size, hp.vocab_size, kMaxDim);
  check_count(path, keys.context_length, hp.context_length, kMaxContext);
  check_count(path, keys.embedding_length, hp.embedding_length, kMaxDim);
  check_count(path, keys.num_layers, hp.num_layers, kMaxLayers);
  check_count(path, keys.num_heads, hp.num_heads, kMaxDim);
  check_count(path, keys.num_kv_heads, hp.num_kv_heads, hp.num_heads);
  check_count(path, keys.head_dim, hp.head_dim, kMaxDim);
  check_count(path, keys.ffn_length, hp.ffn_length, kMaxDim);
  if (hp.num_heads % hp.num_kv_heads != 0)
    fail(path, keys.num_kv_heads,
         "is " + std::to_string(hp.num_kv_heads) + ", which does not divide " + keys.num_heads +
             " (" + std::to_string(hp.num_heads) + ")");
  if (hp.num_heads * hp.head_dim > kMaxDim)
    fail(path, keys.head_dim, "times " + keys.num_heads + " is over " + std::to_string(kMaxDim));
  check_positive(path, keys.norm_eps, hp.norm_eps);
  check_positive(path, keys.embedding_length, hp.embedding_scale);
  check_non_negative(path, keys.attention_scale, hp.attention_scale);
  check_non_negative(path, keys.softcap, hp.attention_softcap);
  check_non_negative(path, keys.softcap, hp.final_softcap);
  check_rope(path, hp, hp.rope, keys, keys.rope_theta);
  check_rope(path, hp, hp.rope_local, keys, keys.rope_local_theta);
  if (hp.rope.neox != hp.rope_local.neox)
    fail(path, keys.rope_local_theta, "uses another rotation layout than the global rope");
  if (hp.sliding_window < 0)
    fail(path, keys.sliding_window, "is " + std::to_string(hp.sliding_window) + ", expected >= 0");
  // A period above num_layers is fine: every layer slides.
  if (hp.sliding_window_pattern < 0 || hp.sliding_window_pattern > kMaxLayers)
    fail(path, keys.sliding_window_pattern,
         "is " + std::to_string(hp.sliding_window_pattern) + ", expected 0.." + std::to_string(kMaxLayers));
  if (hp.sliding_window > 0 && hp.sliding_window_pattern == 0)
    fail(path, keys.sliding_window_pattern, "is missing while a sliding window is set");
}

std::optional<int32_t> sliding_pattern_of(const std::vector<bool>& is_sliding) {
  const size_t n = is_sliding.size();
  size_t first_global = n;
  for (size_t i = 0; i < n; ++i) {
    if (!is_sliding[i]) {
      first_global = i;
      break;
    }
  }
  if (first_global == n) return static_cast<int32_t>(n + 1);  // all slide (also n == 0)
  const size_t period = first_global + 1;
  if (period == 1) {
    for (bool sliding : is_sliding)
      if (sliding) return std::nullopt;
    return 0;  // none slides
  }
  for (size_t i = 0; i < n; ++i)
    if (is_sliding[i] != ((i + 1) % period != 0)) return std::nullopt;
  return static_cast<int32_t>(period);
}

}  // namespace sluice::loader::detail
