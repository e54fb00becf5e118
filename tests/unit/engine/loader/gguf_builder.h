#pragma once
// Test-only GGUF writer: builds GGUF bytes in memory, valid or deliberately broken, and
// writes them to a temporary file that disappears with the TempFile. Single-threaded.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <unistd.h>

#include "backends/dtype.h"
#include "engine/loader/gguf_value.h"

namespace sluice::loader::testing {

using Bytes = std::vector<std::byte>;

// Appends little-endian fields; the building block for hand-made hostile records.
class ByteWriter {
 public:
  template <class T>
  ByteWriter& put(T value) {
    return raw(&value, sizeof value);
  }
  ByteWriter& u32(uint32_t value) { return put(value); }
  ByteWriter& u64(uint64_t value) { return put(value); }
  ByteWriter& str(std::string_view text) {
    u64(text.size());
    return raw(text.data(), text.size());
  }
  // resize + memcpy rather than insert: g++ 12 -O2 warns falsely (-Wstringop-overflow)
  // about small inserts into a vector<std::byte>.
  ByteWriter& raw(const void* data, size_t size) {
    const size_t old_size = bytes_.size();
    bytes_.resize(old_size + size);
    if (size != 0) std::memcpy(bytes_.data() + old_size, data, size);
    return *this;
  }
  ByteWriter& raw(const Bytes& bytes) { return raw(bytes.data(), bytes.size()); }
  ByteWriter& pad_to(uint64_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
    return *this;
  }
  const Bytes& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  Bytes bytes_;
};

class GgufBuilder {
 public:
  GgufBuilder& magic(std::string_view text) { magic_ = std::string(text); return *this; }
  GgufBuilder& version(uint32_t value) { version_ = value; return *this; }
  GgufBuilder& kv_count(uint64_t value) { kv_count_ = value; return *this; }
  GgufBuilder& tensor_count(uint64_t value) { tensor_count_ = value; return *this; }
  // Alignment used to lay out the data section; add general.alignment separately.
  GgufBuilder& layout_alignment(uint64_t value) { alignment_ = value; return *this; }

  // A whole kv record from raw bytes (key included); counts as one kv.
  GgufBuilder& raw_kv(const Bytes& record) {
    kvs_.push_back(record);
    return *this;
  }
  // A key, a value type id and already-encoded value bytes.
  GgufBuilder& kv(std::string_view key, uint32_t type_id, const Bytes& value) {
    return raw_kv(ByteWriter().str(key).u32(type_id).raw(value).bytes());
  }
  template <class T>
  GgufBuilder& scalar(std::string_view key, GgufType type, T value) {
    return kv(key, static_cast<uint32_t>(type), ByteWriter().put(value).bytes());
  }
  GgufBuilder& u32(std::string_view key, uint32_t value) {
    return scalar(key, GgufType::UInt32, value);
  }
  GgufBuilder& f32(std::string_view key, float value) {
    return scalar(key, GgufType::Float32, value);
  }
  GgufBuilder& boolean(std::string_view key, bool value) {
    return scalar(key, GgufType::Bool, static_cast<uint8_t>(value ? 1 : 0));
  }
  GgufBuilder& string(std::string_view key, std::string_view value) {
    return kv(key, static_cast<uint32_t>(GgufType::String), ByteWriter().str(value).bytes());
  }
  template <class T>
  GgufBuilder& array(std::string_view key, GgufType element_type, const std::vector<T>& values) {
    ByteWriter value;
    value.u32(static_cast<uint32_t>(element_type)).u64(values.size());
    for (const T& element : values) value.put(element);
    return kv(key, static_cast<uint32_t>(GgufType::Array), value.bytes());
  }
  GgufBuilder& string_array(std::string_view key, const std::vector<std::string>& values) {
    ByteWriter value;
    value.u32(static_cast<uint32_t>(GgufType::String)).u64(values.size());
    for (const std::string& element : values) value.str(element);
    return kv(key, static_cast<uint32_t>(GgufType::Array), value.bytes());
  }

  // A tensor whose data the builder lays out (aligned, filled with `data` or a byte
  // pattern). With `offset` set, the info declares that offset and no data is written.
  GgufBuilder& tensor(std::string_view name, std::vector<uint64_t> shape,
                      backends::DType dtype, Bytes data = {},
                      std::optional<uint64_t> offset = std::nullopt) {
    return tensor_with_type_id(name, std::move(shape), static_cast<uint32_t>(dtype),
                               std::move(data), offset);
  }
  GgufBuilder& tensor_with_type_id(std::string_view name, std::vector<uint64_t> shape,
                                   uint32_t type_id, Bytes data = {},
                                   std::optional<uint64_t> offset = std::nullopt) {
    tensors_.push_back({std::string(name), std::move(shape), type_id, std::move(data), offset});
    return *this;
  }

  Bytes build() const {
    // Lay the data section out first: the infos must carry the offsets.
    std::vector<uint64_t> offsets;
    std::vector<Bytes> blobs;
    uint64_t cursor = 0;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const TensorSpec& spec = tensors_[i];
      if (spec.offset) {
        offsets.push_back(*spec.offset);
        blobs.emplace_back();
        continue;
      }
      cursor = (cursor + alignment_ - 1) / alignment_ * alignment_;
      offsets.push_back(cursor);
      Bytes blob = spec.data;
      if (blob.empty()) blob = pattern(spec, i);
      cursor += blob.size();
      blobs.push_back(std::move(blob));
    }

    ByteWriter out;
    out.raw(magic_.data(), magic_.size()).u32(version_);
    out.u64(tensor_count_.value_or(tensors_.size()));
    out.u64(kv_count_.value_or(kvs_.size()));
    for (const Bytes& record : kvs_) out.raw(record);
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const TensorSpec& spec = tensors_[i];
      out.str(spec.name).u32(static_cast<uint32_t>(spec.shape.size()));
      for (const uint64_t dim : spec.shape) out.u64(dim);
      out.u32(spec.type_id).u64(offsets[i]);
    }
    if (!tensors_.empty()) out.pad_to(alignment_);
    const size_t data_start = out.size();
    Bytes bytes = out.bytes();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      if (blobs[i].empty()) continue;
      const size_t begin = data_start + offsets[i];
      bytes.resize(std::max(bytes.size(), begin + blobs[i].size()));
      std::copy(blobs[i].begin(), blobs[i].end(), bytes.begin() + static_cast<std::ptrdiff_t>(begin));
    }
    return bytes;
  }

 private:
  struct TensorSpec {
    std::string name;
    std::vector<uint64_t> shape;
    uint32_t type_id;
    Bytes data;
    std::optional<uint64_t> offset;
  };

  static Bytes pattern(const TensorSpec& spec, size_t index) {
    uint64_t num_elements = 1;
    for (const uint64_t dim : spec.shape) num_elements *= dim;
    const auto* traits = backends::find_dtype(spec.type_id);
    if (traits == nullptr) return {};
    const uint64_t num_bytes =
        backends::dtype_bytes(static_cast<backends::DType>(spec.type_id), num_elements)
            .value_or(0);
    Bytes blob(num_bytes);
    for (size_t b = 0; b < blob.size(); ++b) blob[b] = std::byte((b * 7 + index * 13 + 1) & 0xFF);
    return blob;
  }

  std::string magic_ = "GGUF";
  uint32_t version_ = 3;
  std::optional<uint64_t> kv_count_;
  std::optional<uint64_t> tensor_count_;
  uint64_t alignment_ = 32;
  std::vector<Bytes> kvs_;
  std::vector<TensorSpec> tensors_;
};

// A file in a fresh temporary directory, removed with it on destruction.
class TempFile {
 public:
  explicit TempFile(const Bytes& bytes, std::string_view name = "model.gguf") {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("sluice-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
    path_ = dir_ / name;
    rewrite(bytes);
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  ~TempFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  void rewrite(const Bytes& bytes) const { rewrite(bytes.data(), bytes.size()); }
  void rewrite(const std::byte* data, size_t size) const {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) throw std::runtime_error("cannot write " + path_.string());
  }
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::filesystem::path path_;
};

}  // namespace sluice::loader::testing
