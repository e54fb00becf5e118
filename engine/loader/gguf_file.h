#pragma once
// The GGUF (v2/v3) model file reader.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/dtype.h"
#include "engine/loader/gguf_value.h"
#include "engine/loader/load_error.h"
#include "engine/loader/mapped_file.h"

namespace sluice::loader {

struct GgufKeyValue {
  std::string key;
  GgufValue value;
  uint64_t offset = 0;  // of the key in the file, for error messages
};

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> shape;  // GGML order: shape[0] is the innermost (contiguous) dim
  backends::DType dtype = backends::DType::F32;
  uint64_t offset = 0;  // from the start of the data section
  uint64_t num_bytes = 0;
  uint64_t num_elements = 0;
};

// A GGUF model file, memory-mapped and validated. Owns the mapping, the parsed metadata
// and the tensor table; every string, array and tensor it hands out is a view into the
// mapping, valid while this object lives (moving it keeps them valid). Immutable after
// open(): any thread may read it.
//
// The file is untrusted input. open() bounds-checks every read and every count before
// allocating, and rejects anything a backend could later trip over: unknown types,
// misaligned or out-of-file tensor data, duplicate names, size overflows.
class GgufFile {
 public:
  static constexpr uint32_t kDefaultAlignment = 32;
  static constexpr uint32_t kMaxDims = 4;        // GGML_MAX_DIMS
  static constexpr uint32_t kMaxArrayDepth = 4;  // arrays of arrays of ...

  // Throws LoadError naming the file, the byte offset and the reason.
  static GgufFile open(const std::filesystem::path& path);

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile() = default;

  const std::filesystem::path& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t file_size() const { return mapping_.size(); }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section

  // --- metadata, in file order ---
  std::span<const GgufKeyValue> metadata() const { return metadata_; }
  std::vector<std::string_view> keys() const;
  const GgufValue* find(std::string_view key) const;

  // nullopt when the key is absent; a present key of another type throws LoadError
  // naming the key, its type and the type asked for. get_uint accepts any integer type
  // holding a non-negative value; get_int any integer that fits int64; get_float
  // float32 or float64. Views stay valid while this file lives.
  std::optional<std::string_view> get_string(std::string_view key) const;
  std::optional<uint64_t> get_uint(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::optional<std::span<const std::string_view>> get_string_array(std::string_view key) const;
  std::optional<std::vector<int64_t>> get_int_array(std::string_view key) const;
  std::optional<std::vector<float>> get_float_array(std::string_view key) const;

  // --- tensors, in file order ---
  std::span<const GgufTensorInfo> tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // The tensor's bytes in the mapping; bounds were checked by open().
  std::span<const std::byte> tensor_data(const GgufTensorInfo& tensor) const;

 private:
  friend class GgufParser;
  GgufFile() = default;

  [[noreturn]] void throw_wrong_type(const GgufKeyValue& entry, std::string_view wanted) const;
  const GgufKeyValue* find_entry(std::string_view key) const;

  std::filesystem::path path_;
  MappedFile mapping_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::map<std::string, size_t, std::less<>> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
};

}  // namespace sluice::loader
