#include "engine/loader/weight_source.h"

#include <algorithm>
#include <string>

#include "engine/loader/load_error.h"

namespace sluice::loader {
namespace {

std::string shape_text(std::span<const int64_t> shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

std::string lower_extension(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

WeightView WeightSource::require(std::string_view gguf_name, std::span<const int64_t> shape) const {
  std::optional<WeightView> view = find(gguf_name);
  if (!view) throw LoadError(path(), "missing tensor '" + std::string(gguf_name) + "'");
  if (!shape.empty() && !std::equal(shape.begin(), shape.end(), view->shape.begin(), view->shape.end()))
    throw LoadError(path(), "tensor '" + std::string(gguf_name) + "': expected shape " +
                                shape_text(shape) + ", found " + shape_text(view->shape));
  return *view;
}

std::unique_ptr<WeightSource> open_weights(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return open_safetensors_weights(path);
  const std::string ext = lower_extension(path);
  if (ext == ".safetensors" || ext == ".json") {
    const std::filesystem::path dir = path.parent_path();
    return open_safetensors_weights(dir.empty() ? std::filesystem::path(".") : dir);
  }
  return open_gguf_weights(path);
}

}  // namespace sluice::loader
