#include "engine/loader/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/loader/json_file.h"
#include "engine/loader/load_error.h"

namespace sluice::loader {
namespace {

using backends::DType;
using nlohmann::json;

constexpr uint64_t kMaxIndexBytes = 64u << 20;

std::optional<std::pair<DType, uint64_t>> parse_dtype(std::string_view name) {
  if (name == "F32") return std::pair{DType::F32, uint64_t{4}};
  if (name == "F16") return std::pair{DType::F16, uint64_t{2}};
  if (name == "BF16") return std::pair{DType::BF16, uint64_t{2}};
  return std::nullopt;
}

// Multiplies without wrapping; false on overflow.
bool mul_checked(uint64_t a, uint64_t b, uint64_t& out) {
  if (a != 0 && b > UINT64_MAX / a) return false;
  out = a * b;
  return true;
}

SafetensorsTensorInfo parse_tensor(const std::filesystem::path& path, const std::string& name,
                                   const json& entry) {
  const auto fail = [&](const std::string& reason) -> SafetensorsTensorInfo {
    throw LoadError(path, "tensor '" + name + "': " + reason);
  };
  if (!entry.is_object()) return fail("header entry is not an object");
  const auto dtype_it = entry.find("dtype");
  const auto shape_it = entry.find("shape");
  const auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || !dtype_it->is_string()) return fail("missing or non-string 'dtype'");
  if (shape_it == entry.end() || !shape_it->is_array()) return fail("missing or non-array 'shape'");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2)
    return fail("'data_offsets' is not an array of two offsets");

  SafetensorsTensorInfo info;
  info.name = name;
  const std::string dtype_name = dtype_it->get<std::string>();
  const auto dtype = parse_dtype(dtype_name);
  if (!dtype) return fail("dtype " + dtype_name + " is not supported (F32, F16, BF16)");
  info.dtype = dtype->first;

  uint64_t num_elements = 1;
  for (const json& dim : *shape_it) {
    if (!dim.is_number_unsigned()) return fail("shape has a dimension that is not a non-negative integer");
    const uint64_t value = dim.get<uint64_t>();
    if (value > static_cast<uint64_t>(INT64_MAX) || !mul_checked(num_elements, value, num_elements))
      return fail("shape overflows");
    info.shape.push_back(static_cast<int64_t>(value));
  }
  for (const json& offset : *offsets_it)
    if (!offset.is_number_unsigned()) return fail("'data_offsets' holds a non-integer or negative value");
  info.begin = (*offsets_it)[0].get<uint64_t>();
  info.end = (*offsets_it)[1].get<uint64_t>();
  uint64_t num_bytes = 0;
  if (!mul_checked(num_elements, dtype->second, num_bytes)) return fail("size overflows");
  if (info.end < info.begin || info.end - info.begin != num_bytes)
    return fail("data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
                ") do not hold the " + std::to_string(num_bytes) + " bytes its shape needs");
  return info;
}

// A shard named by the index must be a plain file name in the model folder.
bool is_plain_file_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return name.find('/') == std::string::npos && name.find('\\') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

}  // namespace

namespace detail {

nlohmann::json parse_json_file(const std::filesystem::path& path, uint64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LoadError(path, "cannot open");
  std::string text;
  text.resize(max_bytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > max_bytes) throw LoadError(path, "larger than " + std::to_string(max_bytes) + " bytes");
  if (!json_depth_within(text, SafetensorsFile::kMaxJsonDepth + 8))
    throw LoadError(path, "not valid JSON, or nested too deeply");
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw LoadError(path, "not valid JSON");
  return doc;
}

}  // namespace detail

bool json_depth_within(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if (c == '}' || c == ']') {
      if (--depth < 0) return false;
    }
  }
  return depth == 0 && !in_string;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  SafetensorsFile file;
  file.path_ = path;
  file.mapping_ = MappedFile::open(path);
  const std::span<const std::byte> bytes = file.mapping_.bytes();
  if (bytes.size() < 8) throw LoadError(path, 0, "shorter than the 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);  // little-endian hosts only, as GGUF
  if (header_len > bytes.size() - 8)
    throw LoadError(path, 0, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                                 std::to_string(bytes.size()) + " bytes)");
  if (header_len > kMaxHeaderBytes)
    throw LoadError(path, 0, "header length " + std::to_string(header_len) + " is over the limit of " +
                                 std::to_string(kMaxHeaderBytes));
  const std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
  if (!json_depth_within(header, kMaxJsonDepth))
    throw LoadError(path, 8, "header is not valid JSON, or nested too deeply");
  const json doc = json::parse(header.begin(), header.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw LoadError(path, 8, "header is not valid JSON");
  if (!doc.is_object()) throw LoadError(path, 8, "header is not a JSON object");
  file.data_offset_ = 8 + header_len;
  const uint64_t data_size = bytes.size() - file.data_offset_;

  for (const auto& [name, entry] : doc.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) throw LoadError(path, 8, "'__metadata__' is not an object");
      for (const auto& [key, value] : entry.items())
        if (value.is_string()) file.metadata_.emplace(key, value.get<std::string>());
      continue;
    }
    SafetensorsTensorInfo info = parse_tensor(path, name, entry);
    if (info.end > data_size)
      throw LoadError(path, "tensor '" + name + "': data [" + std::to_string(info.begin) + ", " +
                                std::to_string(info.end) + ") runs past the data section (" +
                                std::to_string(data_size) + " bytes)");
    file.tensors_.push_back(std::move(info));
  }
  std::sort(file.tensors_.begin(), file.tensors_.end(),
            [](const auto& a, const auto& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  for (size_t i = 0; i < file.tensors_.size(); ++i) {
    if (i > 0 && file.tensors_[i].begin < file.tensors_[i - 1].end)
      throw LoadError(path, "tensors '" + file.tensors_[i - 1].name + "' and '" + file.tensors_[i].name +
                                "' overlap");
    file.index_.emplace(file.tensors_[i].name, i);
  }
  return file;
}

const SafetensorsTensorInfo* SafetensorsFile::find_tensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> SafetensorsFile::tensor_data(const SafetensorsTensorInfo& tensor) const {
  return mapping_.bytes().subspan(data_offset_ + tensor.begin, tensor.end - tensor.begin);
}

SafetensorsSet SafetensorsSet::open(const std::filesystem::path& dir) {
  SafetensorsSet set;
  const std::filesystem::path index_path = dir / "model.safetensors.index.json";
  std::error_code ec;
  std::map<std::string, std::string> expected;  // tensor → shard, from the index
  std::vector<std::filesystem::path> shards;
  if (std::filesystem::is_regular_file(index_path, ec)) {
    const json index = detail::parse_json_file(index_path, kMaxIndexBytes);
    const auto map_it = index.is_object() ? index.find("weight_map") : index.end();
    if (map_it == index.end() || !map_it->is_object())
      throw LoadError(index_path, "missing 'weight_map' object");
    std::set<std::string> names;
    for (const auto& [tensor, shard] : map_it->items()) {
      if (!shard.is_string()) throw LoadError(index_path, "weight_map['" + tensor + "'] is not a string");
      const std::string shard_name = shard.get<std::string>();
      if (!is_plain_file_name(shard_name))
        throw LoadError(index_path, "weight_map['" + tensor + "'] names '" + shard_name +
                                        "', which is not a file name inside the model folder");
      expected.emplace(tensor, shard_name);
      names.insert(shard_name);
    }
    for (const std::string& name : names) shards.push_back(dir / name);
  } else if (std::filesystem::is_regular_file(dir / "model.safetensors", ec)) {
    shards.push_back(dir / "model.safetensors");
  } else {
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (entry.path().extension() == ".safetensors") shards.push_back(entry.path());
    std::sort(shards.begin(), shards.end());
  }
  if (shards.empty()) throw LoadError(dir, "no model.safetensors, model.safetensors.index.json or *.safetensors");

  for (const auto& shard : shards) set.files_.push_back(SafetensorsFile::open(shard));
  for (const SafetensorsFile& file : set.files_) {
    for (const SafetensorsTensorInfo& info : file.tensors()) {
      if (!set.tensors_.emplace(info.name, Entry{&file, &info}).second)
        throw LoadError(file.path(), "tensor '" + info.name + "' is also in another shard");
    }
  }
  for (const auto& [tensor, shard] : expected) {
    auto it = set.tensors_.find(tensor);
    if (it == set.tensors_.end() || it->second.file->path().filename() != shard)
      throw LoadError(dir / shard, "tensor '" + tensor + "' listed by model.safetensors.index.json is missing");
  }
  return set;
}

}  // namespace sluice::loader
