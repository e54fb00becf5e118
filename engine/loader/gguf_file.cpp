#include "engine/loader/gguf_file.h"

#include <stdexcept>
#include <string>

namespace sluice::loader {

std::vector<std::string_view> GgufFile::keys() const {
  std::vector<std::string_view> out;
  out.reserve(metadata_.size());
  for (const GgufKeyValue& entry : metadata_) out.push_back(entry.key);
  return out;
}

const GgufKeyValue* GgufFile::find_entry(std::string_view key) const {
  const auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second];
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const GgufKeyValue* entry = find_entry(key);
  return entry == nullptr ? nullptr : &entry->value;
}

void GgufFile::throw_wrong_type(const GgufKeyValue& entry, std::string_view wanted) const {
  throw LoadError(path_, entry.offset,
                  "key '" + entry.key + "' has type " + entry.value.type_name() + " and value " +
                      entry.value.to_display_string(4) + ", expected " + std::string(wanted));
}

std::optional<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufKeyValue* entry = find_entry(key);
  if (entry == nullptr) return std::nullopt;
  if (auto value = entry->value.to_string()) return value;
  throw_wrong_type(*entry, "string");
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
  const GgufKeyValue* entry = find_entry(key);
  if (entry == nullptr) return std::nullopt;
  if (auto value = entry->value.to_uint()) return value;
  throw_wrong_type(*entry, "a non-negative integer");
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufKeyValue* entry = find_entry(key);
  if (entry == nullptr) return std::nullopt;
  if (auto value = entry->value.to_int()) return value;
  throw_wrong_type(*entry, "an integer that fits int64");
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufKeyValue* entry = find_entry(key);
  if (entry == nullptr) return std::nullopt;
  if (auto value = entry->value.to_float()) return value;
  throw_wrong_type(*entry, "float32 or float64");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufKeyValue* entry = find_entry(key);
  if (entry == nullptr) return std::nullopt;
  if (auto value = entry->value.to_bool()) return value;
  throw_wrong_type(*entry, "bool");
}

std::optional<std::span<const std::string_view>> GgufFile::get_string_array(
    std::string_view key) const {
  const GgufKeyValue* entry = find_entry(key);
  if (entry == nullptr) return std::nullopt;
  if (entry->value.is_array() && entry->value.element_type() == GgufType::String) {
    return entry->value.strings();
  }
  throw_wrong_type(*entry, "array[string]");
}

std::optional<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufKeyValue* entry = find_entry(key);
  if (entry == nullptr) return std::nullopt;
  if (auto values = entry->value.to_int_vector()) return values;
  throw_wrong_type(*entry, "an array of integers that fit int64");
}

std::optional<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  const GgufKeyValue* entry = find_entry(key);
  if (entry == nullptr) return std::nullopt;
  if (auto values = entry->value.to_float_vector()) return values;
  throw_wrong_type(*entry, "array[float32] or array[float64]");
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> GgufFile::tensor_data(const GgufTensorInfo& tensor) const {
  const uint64_t begin = data_offset_ + tensor.offset;
  // Only an info from another file can fail this; open() checked our own.
  if (tensor.offset > file_size() || begin > file_size() ||
      tensor.num_bytes > file_size() - begin) {
    throw std::out_of_range("tensor '" + tensor.name + "' is not inside " + path_.string());
  }
  return mapping_.bytes().subspan(begin, tensor.num_bytes);
}

}  // namespace sluice::loader
