// GgufFile::open: the validating parser. The accessors live in gguf_file.cpp.
#include "engine/loader/gguf_file.h"

#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace sluice::loader {

static_assert(std::endian::native == std::endian::little,
              "GGUF values are read in place; a big-endian host would need byte swaps");

namespace {

constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
// Smallest encodings, used to reject counts that cannot fit in the bytes left before
// anything is allocated: a kv is a key length, a value type and at least one value byte;
// a tensor info a name length, n_dims, a ggml type and an offset; a nested array its
// element type and count.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;
constexpr uint64_t kMinArrayBytes = 4 + 8;
constexpr uint64_t kMinStringBytes = 8;
// Nested arrays cost far more in memory than on disk; nobody needs this many.
constexpr uint64_t kMaxNestedValues = uint64_t{1} << 20;

std::string shape_string(const std::vector<uint64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

std::string printable_magic(const std::byte* p) {
  std::string out;
  for (int i = 0; i < 4; ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  return out;
}

}  // namespace

// Fills one GgufFile from its mapping, keeping the read position and the current item
// for error messages. Lives only inside open(), on the caller's thread.
class GgufParser {
 public:
  explicit GgufParser(GgufFile& file) : file_(file), bytes_(file.mapping_.bytes()) {}

  void parse() {
    const auto [num_tensors, num_kvs] = read_header();
    read_metadata(num_kvs);
    read_tensor_infos(num_tensors);
    const uint64_t alignment = file_.alignment_;
    file_.data_offset_ = (pos_ + alignment - 1) / alignment * alignment;
    check_tensor_bounds();
    if (file_.data_offset_ > bytes_.size()) file_.data_offset_ = bytes_.size();
  }

 private:
  [[noreturn]] void fail(uint64_t offset, const std::string& reason) const {
    throw LoadError(file_.path_, offset, context_.empty() ? reason : context_ + ": " + reason);
  }

  uint64_t remaining() const { return bytes_.size() - pos_; }

  const std::byte* take(uint64_t num_bytes, std::string_view what) {
    if (num_bytes > remaining()) {
      fail(pos_, "unexpected end of file reading " + std::string(what) + " (need " +
                     std::to_string(num_bytes) + " bytes, " + std::to_string(remaining()) +
                     " left)");
    }
    const std::byte* p = bytes_.data() + pos_;
    pos_ += num_bytes;
    return p;
  }

  template <class T>
  T read(std::string_view what) {
    T value;
    std::memcpy(&value, take(sizeof value, what), sizeof value);
    return value;
  }

  std::string_view read_string(std::string_view what) {
    const uint64_t start = pos_;
    const auto length = read<uint64_t>(what);
    if (length > remaining()) {
      fail(start, std::string(what) + " length " + std::to_string(length) +
                      " runs past the end of the file (" + std::to_string(remaining()) +
                      " bytes left)");
    }
    return {reinterpret_cast<const char*>(take(length, what)), static_cast<size_t>(length)};
  }

  void check_count(uint64_t start, uint64_t count, uint64_t min_bytes, std::string_view what) {
    if (count > remaining() / min_bytes) {
      fail(start, std::string(what) + " count " + std::to_string(count) +
                      " cannot fit in the " + std::to_string(remaining()) +
                      " bytes left in the file");
    }
  }

  std::pair<uint64_t, uint64_t> read_header() {
    const std::byte* magic = take(4, "the magic");
    if (std::memcmp(magic, "GGUF", 4) != 0) {
      fail(0, "not a GGUF file (magic \"" + printable_magic(magic) + "\", expected \"GGUF\")");
    }
    file_.version_ = read<uint32_t>("the version");
    if (file_.version_ != 2 && file_.version_ != 3) {
      std::string reason = "GGUF version " + std::to_string(file_.version_) + " is not supported";
      const uint32_t swapped = __builtin_bswap32(file_.version_);
      if (file_.version_ == 1) {
        reason += " (re-convert the model with a current GGUF writer)";
      } else if (swapped == 2 || swapped == 3) {
        reason += " (this looks like a big-endian file)";
      } else {
        reason += " (supported: 2, 3)";
      }
      fail(4, reason);
    }
    const uint64_t counts_offset = pos_;
    const auto num_tensors = read<uint64_t>("the tensor count");
    const auto num_kvs = read<uint64_t>("the metadata count");
    check_count(counts_offset, num_kvs, kMinKvBytes, "metadata");
    check_count(counts_offset, num_tensors, kMinTensorInfoBytes, "tensor");
    if (num_kvs * kMinKvBytes + num_tensors * kMinTensorInfoBytes > remaining()) {
      fail(counts_offset, std::to_string(num_kvs) + " metadata entries and " +
                              std::to_string(num_tensors) + " tensors cannot fit in the " +
                              std::to_string(remaining()) + " bytes left in the file");
    }
    return {num_tensors, num_kvs};
  }

  GgufType read_type(std::string_view what) {
    const uint64_t start = pos_;
    const auto id = read<uint32_t>(what);
    const std::optional<GgufType> type = to_gguf_type(id);
    if (!type) fail(start, "unknown " + std::string(what) + " " + std::to_string(id));
    return *type;
  }

  GgufValue read_value(GgufType type, uint32_t depth) {
    if (type == GgufType::String) return GgufValue::make_string(read_string("string"));
    if (type == GgufType::Array) return read_array(depth + 1);
    const uint64_t start = pos_;
    const std::byte* raw = take(gguf_fixed_size(type), gguf_type_name(type));
    if (type == GgufType::Bool) check_bool(start, raw, 1);
    return GgufValue::make_fixed(type, raw);
  }

  void check_bool(uint64_t start, const std::byte* raw, uint64_t count) const {
    for (uint64_t i = 0; i < count; ++i) {
      const auto byte = static_cast<uint8_t>(raw[i]);
      if (byte > 1) fail(start + i, "invalid bool value " + std::to_string(byte));
    }
  }

  GgufValue read_array(uint32_t depth) {
    const uint64_t start = pos_;
    if (depth > GgufFile::kMaxArrayDepth) {
      fail(start, "arrays nested deeper than " + std::to_string(GgufFile::kMaxArrayDepth));
    }
    const GgufType element_type = read_type("array element type");
    const uint64_t count_offset = pos_;
    const auto count = read<uint64_t>("array count");
    const std::string what = "array[" + std::string(gguf_type_name(element_type)) + "]";
    if (element_type == GgufType::String) {
      check_count(count_offset, count, kMinStringBytes, what);
      std::vector<std::string_view> strings;
      strings.reserve(count);
      for (uint64_t i = 0; i < count; ++i) strings.push_back(read_string("string"));
      return GgufValue::make_string_array(std::move(strings));
    }
    if (element_type == GgufType::Array) {
      check_count(count_offset, count, kMinArrayBytes, what);
      num_nested_values_ += count;
      if (num_nested_values_ > kMaxNestedValues) {
        fail(count_offset, "more than " + std::to_string(kMaxNestedValues) + " nested arrays");
      }
      std::vector<GgufValue> arrays;
      arrays.reserve(count);
      for (uint64_t i = 0; i < count; ++i) arrays.push_back(read_array(depth + 1));
      return GgufValue::make_nested_array(std::move(arrays));
    }
    const uint32_t element_size = gguf_fixed_size(element_type);
    check_count(count_offset, count, element_size, what);
    const uint64_t data_start = pos_;
    const std::byte* raw = take(count * element_size, what);
    if (element_type == GgufType::Bool) check_bool(data_start, raw, count);
    return GgufValue::make_numeric_array(element_type, count, raw);
  }

  void read_metadata(uint64_t num_kvs) {
    file_.metadata_.reserve(num_kvs);
    for (uint64_t i = 0; i < num_kvs; ++i) {
      context_.clear();
      const uint64_t start = pos_;
      std::string key(read_string("metadata key"));
      if (file_.metadata_index_.count(key) != 0) fail(start, "duplicate key '" + key + "'");
      context_ = "key '" + key + "'";
      const GgufType type = read_type("value type");
      GgufValue value = read_value(type, 0);
      file_.metadata_index_.emplace(key, file_.metadata_.size());
      file_.metadata_.push_back({std::move(key), std::move(value), start});
    }
    context_.clear();
    read_alignment();
  }

  void read_alignment() {
    const GgufKeyValue* entry = file_.find_entry("general.alignment");
    if (entry == nullptr) return;
    const std::optional<uint64_t> alignment = entry->value.to_uint();
    if (!alignment) {
      fail(entry->offset, "key 'general.alignment' has type " + entry->value.type_name() +
                              " and value " + entry->value.to_display_string() +
                              ", expected a positive integer");
    }
    if (*alignment == 0 || !std::has_single_bit(*alignment) ||
        *alignment > std::numeric_limits<uint32_t>::max()) {
      fail(entry->offset, "general.alignment " + std::to_string(*alignment) +
                              " is not a power of two below 2^32");
    }
    file_.alignment_ = static_cast<uint32_t>(*alignment);
  }

  void read_tensor_infos(uint64_t num_tensors) {
    file_.tensors_.reserve(num_tensors);
    record_offsets_.reserve(num_tensors);
    for (uint64_t i = 0; i < num_tensors; ++i) {
      context_.clear();
      const uint64_t start = pos_;
      GgufTensorInfo tensor;
      tensor.name = std::string(read_string("tensor name"));
      if (file_.tensor_index_.count(tensor.name) != 0) {
        fail(start, "duplicate tensor name '" + tensor.name + "'");
      }
      context_ = "tensor '" + tensor.name + "'";
      read_shape(tensor);
      read_dtype(tensor);
      const uint64_t offset_pos = pos_;
      tensor.offset = read<uint64_t>("tensor offset");
      if (tensor.offset % file_.alignment_ != 0) {
        fail(offset_pos, "data offset " + std::to_string(tensor.offset) +
                             " is not a multiple of the alignment " +
                             std::to_string(file_.alignment_));
      }
      file_.tensor_index_.emplace(tensor.name, file_.tensors_.size());
      file_.tensors_.push_back(std::move(tensor));
      record_offsets_.push_back(start);
    }
    context_.clear();
  }

  void read_shape(GgufTensorInfo& tensor) {
    const uint64_t start = pos_;
    const auto num_dims = read<uint32_t>("n_dims");
    if (num_dims > GgufFile::kMaxDims) {
      fail(start, "n_dims " + std::to_string(num_dims) + " exceeds the maximum of " +
                      std::to_string(GgufFile::kMaxDims));
    }
    tensor.shape.reserve(num_dims);
    for (uint32_t d = 0; d < num_dims; ++d) {
      const uint64_t dim_pos = pos_;
      const auto dim = read<uint64_t>("a dimension");
      // GGML keeps dimensions and element counts in int64_t.
      if (dim > kInt64Max) {
        fail(dim_pos, "dimension " + std::to_string(d) + " is " + std::to_string(dim) +
                          ", larger than INT64_MAX");
      }
      tensor.shape.push_back(dim);
    }
    // A zero dimension makes an empty tensor however large the others are.
    uint64_t num_elements = 1;
    for (const uint64_t dim : tensor.shape) {
      if (dim == 0) {
        num_elements = 0;
        break;
      }
      if (num_elements > kInt64Max / dim) {
        fail(start, "element count of shape " + shape_string(tensor.shape) + " overflows int64");
      }
      num_elements *= dim;
    }
    tensor.num_elements = num_elements;
  }

  void read_dtype(GgufTensorInfo& tensor) {
    const uint64_t start = pos_;
    const auto id = read<uint32_t>("ggml type");
    const backends::DTypeTraits* traits = backends::find_dtype(id);
    if (traits == nullptr) fail(start, "unknown ggml type " + std::to_string(id));
    tensor.dtype = static_cast<backends::DType>(id);
    const uint64_t innermost = tensor.shape.empty() ? 1 : tensor.shape[0];
    if (innermost % traits->block_size != 0) {
      fail(start, "innermost dimension " + std::to_string(innermost) +
                      " is not a multiple of the " + std::string(traits->name) +
                      " block size " + std::to_string(traits->block_size));
    }
    const std::optional<uint64_t> num_bytes =
        backends::dtype_bytes(tensor.dtype, tensor.num_elements);
    if (!num_bytes) {
      fail(start, "byte size of shape " + shape_string(tensor.shape) + " of " +
                      std::string(traits->name) + " overflows");
    }
    tensor.num_bytes = *num_bytes;
  }

  void check_tensor_bounds() const {
    const uint64_t file_size = bytes_.size();
    const uint64_t data_offset = file_.data_offset_;
    for (size_t i = 0; i < file_.tensors_.size(); ++i) {
      const GgufTensorInfo& tensor = file_.tensors_[i];
      const std::string name = "tensor '" + tensor.name + "'";
      uint64_t begin = 0;
      uint64_t end = 0;
      if (__builtin_add_overflow(data_offset, tensor.offset, &begin) ||
          __builtin_add_overflow(begin, tensor.num_bytes, &end)) {
        throw LoadError(file_.path_, record_offsets_[i],
                        name + " data offset " + std::to_string(tensor.offset) + " + size " +
                            std::to_string(tensor.num_bytes) + " overflows");
      }
      if (end > file_size) {
        throw LoadError(file_.path_, record_offsets_[i],
                        name + " data [" + std::to_string(begin) + ", " + std::to_string(end) +
                            ") runs past the end of the file (" + std::to_string(file_size) +
                            " bytes)");
      }
    }
  }

  GgufFile& file_;
  std::span<const std::byte> bytes_;
  uint64_t pos_ = 0;
  std::string context_;  // "key 'x'" or "tensor 'y'": prefixes errors inside an item
  uint64_t num_nested_values_ = 0;
  std::vector<uint64_t> record_offsets_;  // file offset of each tensor info
};

GgufFile GgufFile::open(const std::filesystem::path& path) {
  GgufFile file;
  file.path_ = path;
  file.mapping_ = MappedFile::open(path);
  GgufParser(file).parse();
  return file;
}

}  // namespace sluice::loader
