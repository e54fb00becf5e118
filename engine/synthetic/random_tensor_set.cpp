#include "engine/synthetic/random_tensor_set.h"

#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "engine/loader/load_error.h"
#include "engine/synthetic/random_weights.h"

namespace sluice::loader {
namespace {

using backends::DType;

class RandomTensorSet final : public TensorSet {
 public:
  RandomTensorSet(std::string name, DType dtype, uint64_t seed)
      : path_("random:" + std::move(name)), dtype_(dtype), seed_(seed) {
    if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
      throw LoadError(path_, "random tensors are F32, F16 or BF16");
  }

  const std::filesystem::path& path() const override { return path_; }
  std::optional<WeightView> find(std::string_view name) const override {
    std::lock_guard lock(mutex_);
    auto it = made_.find(name);
    if (it == made_.end()) return std::nullopt;
    return it->second;
  }
  std::filesystem::path file_of(std::string_view) const override { return path_; }
  std::vector<std::string> names() const override {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, view] : made_) out.push_back(name);
    return out;
  }

  WeightView require(std::string_view name, std::span<const int64_t> shape) const override {
    if (auto view = find(name)) return TensorSet::require(name, shape);
    int64_t elements = 1, fan_in = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      elements *= shape[i];
      if (i > 0) fan_in *= shape[i];
    }
    const size_t element_bytes = dtype_ == DType::F32 ? 4 : 2;
    std::lock_guard lock(mutex_);
    auto& bytes = storage_.emplace_back(static_cast<size_t>(elements) * element_bytes);
    const uint64_t seed = seed_ ^ std::hash<std::string_view>{}(name);
    if (shape.size() >= 2) {
      fill_random_matrix(dtype_, fan_in, seed, bytes);
    } else {
      fill_ones_to_two(bytes, seed);
    }
    WeightView view{dtype_, std::vector<int64_t>(shape.begin(), shape.end()), bytes};
    made_.emplace(std::string(name), view);
    return view;
  }

 private:
  // Values in [1, 2): exponent 0, random mantissa.
  void fill_ones_to_two(std::vector<std::byte>& bytes, uint64_t seed) const {
    std::vector<std::byte> bits(bytes.size());
    fill_random_matrix(dtype_, 1, seed, bits);
    const size_t width = dtype_ == DType::F32 ? 4 : 2;
    for (size_t i = 0; i < bytes.size(); i += width) {
      if (dtype_ == DType::F32) {
        uint32_t v;
        std::memcpy(&v, &bits[i], 4);
        v = (v & 0x007FFFFFu) | 0x3F800000u;
        std::memcpy(&bytes[i], &v, 4);
      } else {
        uint16_t v;
        std::memcpy(&v, &bits[i], 2);
        v = dtype_ == DType::BF16 ? static_cast<uint16_t>((v & 0x007Fu) | 0x3F80u)
                                  : static_cast<uint16_t>((v & 0x03FFu) | 0x3C00u);
        std::memcpy(&bytes[i], &v, 2);
      }
    }
  }

  std::filesystem::path path_;
  DType dtype_;
  uint64_t seed_;
  mutable std::mutex mutex_;
  mutable std::deque<std::vector<std::byte>> storage_;  // stable addresses
  mutable std::map<std::string, WeightView, std::less<>> made_;
};

}  // namespace

std::unique_ptr<TensorSet> make_random_tensor_set(std::string name, DType dtype, uint64_t seed) {
  return std::make_unique<RandomTensorSet>(std::move(name), dtype, seed);
}

}  // namespace sluice::loader
