#pragma once
// The safetensors reader: one file (u64 header length, JSON header, data), and the
// set of shards a Hugging Face model folder holds.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/dtype.h"
#include "engine/loader/mapped_file.h"

namespace sluice::loader {

struct SafetensorsTensorInfo {
  std::string name;
  backends::DType dtype = backends::DType::F32;
  std::vector<int64_t> shape;  // row-major, as stored
  uint64_t begin = 0;          // byte range in the data section
  uint64_t end = 0;
};

// One .safetensors file, memory-mapped and validated. Owns the mapping and the
// tensor table; tensor_data() views stay valid while this object lives (moves
// included). Immutable after open(): any thread may read it.
//
// The file is untrusted: open() checks the header length against the file, the
// JSON's size and nesting before parsing it, every field's type, that each dtype is
// F32, F16 or BF16 (LoadError naming the tensor otherwise), that shape and byte
// range agree without overflow, and that ranges lie in the file and do not overlap.
class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderBytes = 100u << 20;  // as the reference implementation
  static constexpr int kMaxJsonDepth = 8;

  // Throws LoadError naming the file and the reason.
  static SafetensorsFile open(const std::filesystem::path& path);

  SafetensorsFile(SafetensorsFile&&) noexcept = default;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept = default;

  const std::filesystem::path& path() const { return path_; }
  std::span<const SafetensorsTensorInfo> tensors() const { return tensors_; }  // in offset order
  const SafetensorsTensorInfo* find_tensor(std::string_view name) const;
  std::span<const std::byte> tensor_data(const SafetensorsTensorInfo& tensor) const;
  // The "__metadata__" string map ({"format": "pt"}).
  const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;

  std::filesystem::path path_;
  MappedFile mapping_;
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string, std::less<>> metadata_;
};

// The safetensors files of a model folder: the shards listed by
// model.safetensors.index.json, else model.safetensors, else every *.safetensors
// file in the folder. Tensor names are unique across shards. Immutable after open.
class SafetensorsSet {
 public:
  struct Entry {
    const SafetensorsFile* file;
    const SafetensorsTensorInfo* info;
  };

  // Throws LoadError naming the folder or file at fault.
  static SafetensorsSet open(const std::filesystem::path& dir);

  std::span<const SafetensorsFile> files() const { return files_; }
  const std::map<std::string, Entry, std::less<>>& tensors() const { return tensors_; }

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, Entry, std::less<>> tensors_;
};

// Checks a JSON text's nesting depth without parsing it; false when deeper than
// max_depth or when brackets do not balance. Cheap guard before a recursive parser.
bool json_depth_within(std::string_view text, int max_depth);

}  // namespace sluice::loader
