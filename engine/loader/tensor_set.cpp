#include "engine/loader/tensor_set.h"

#include <algorithm>

#include "engine/loader/load_error.h"
#include "engine/loader/safetensors_file.h"
#include "engine/loader/weight_table.h"

namespace sluice::loader {
namespace {

using backends::DType;

std::string shape_text(std::span<const int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

class SafetensorsTensorSet final : public TensorSet {
 public:
  explicit SafetensorsTensorSet(const std::filesystem::path& dir) : dir_(dir), set_(SafetensorsSet::open(dir)) {}

  const std::filesystem::path& path() const override { return dir_; }
  std::optional<WeightView> find(std::string_view name) const override {
    auto it = set_.tensors().find(name);
    if (it == set_.tensors().end()) return std::nullopt;
    const auto& [file, info] = it->second;
    return WeightView{info->dtype, info->shape, file->tensor_data(*info)};
  }
  std::filesystem::path file_of(std::string_view name) const override {
    auto it = set_.tensors().find(name);
    return it == set_.tensors().end() ? dir_ : it->second.file->path();
  }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [name, entry] : set_.tensors()) out.push_back(name);
    return out;
  }

 private:
  std::filesystem::path dir_;
  SafetensorsSet set_;
};

}  // namespace

WeightView TensorSet::require(std::string_view name, std::span<const int64_t> shape) const {
  std::optional<WeightView> view = find(name);
  if (!view) fail(name, "is missing");
  if (!std::equal(view->shape.begin(), view->shape.end(), shape.begin(), shape.end()))
    fail(name, "has shape " + shape_text(view->shape) + " where " + shape_text(shape) + " is expected");
  return *view;
}

std::vector<float> TensorSet::require_f32(std::string_view name, std::span<const int64_t> shape) const {
  const WeightView view = require(name, shape);
  uint64_t elements = 1;
  for (int64_t d : shape) elements *= static_cast<uint64_t>(d);
  auto values = detail::to_f32(view.dtype, view.data, elements);
  if (!values)
    fail(name, "has dtype " + std::string(backends::dtype_name(view.dtype)) + " where F32, F16 or BF16 is expected");
  return std::move(*values);
}

void TensorSet::fail(std::string_view name, const std::string& reason) const {
  throw LoadError(file_of(name), "tensor '" + std::string(name) + "' " + reason);
}

std::unique_ptr<TensorSet> open_tensor_set(const std::filesystem::path& dir) {
  return std::make_unique<SafetensorsTensorSet>(dir);
}

}  // namespace sluice::loader
