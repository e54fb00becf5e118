#pragma once
// GGUF metadata values and their type ids.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::loader {

// Value type ids as written in GGUF files.
enum class GgufType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

// nullopt for ids outside the spec.
std::optional<GgufType> to_gguf_type(uint32_t id);
std::string_view gguf_type_name(GgufType type);  // "uint32", "string", "array", ...
// Bytes of one fixed-size value; 0 for String and Array.
uint32_t gguf_fixed_size(GgufType type);
bool is_integer(GgufType type);
bool is_float(GgufType type);

// One GGUF metadata value: a scalar, a string, or an array of either (arrays may nest).
// Owns only small bookkeeping: strings and numeric arrays are views into the file
// mapping, valid while the GgufFile that produced the value is alive, so a 50k-entry
// vocabulary costs one string_view per token and its scores cost nothing until read.
// Immutable after parsing; any thread may read it.
class GgufValue {
 public:
  // Factories for the parser; `raw` points at the little-endian bytes in the mapping.
  static GgufValue make_fixed(GgufType type, const std::byte* raw);
  static GgufValue make_string(std::string_view text);
  static GgufValue make_numeric_array(GgufType element_type, uint64_t count,
                                      const std::byte* raw);
  static GgufValue make_string_array(std::vector<std::string_view> strings);
  static GgufValue make_nested_array(std::vector<GgufValue> arrays);

  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::Array; }
  GgufType element_type() const { return element_type_; }  // arrays only
  uint64_t size() const { return count_; }                  // arrays: element count
  // "uint32" or "array[string]", for error messages.
  std::string type_name() const;

  // Scalars; nullopt when the value is not of that kind. to_uint refuses negative
  // values and to_int refuses uint64 values above INT64_MAX.
  std::optional<uint64_t> to_uint() const;
  std::optional<int64_t> to_int() const;
  std::optional<double> to_float() const;
  std::optional<bool> to_bool() const;
  std::optional<std::string_view> to_string() const;

  // Arrays. strings() is empty unless this is an array of strings; arrays() is empty
  // unless this is an array of arrays.
  std::span<const std::string_view> strings() const { return strings_; }
  std::span<const GgufValue> arrays() const { return nested_; }
  // Numeric array elements, converted; nullopt on a non-numeric array or when an
  // element does not fit (negative into uint, uint64 above INT64_MAX into int).
  std::optional<std::vector<int64_t>> to_int_vector() const;
  std::optional<std::vector<float>> to_float_vector() const;
  // The packed little-endian elements of a numeric array, possibly unaligned.
  std::span<const std::byte> raw_bytes() const;

  // A one-line rendering for `sluice inspect`: strings quoted and escaped, long
  // strings and arrays elided after max_items elements.
  std::string to_display_string(size_t max_items = 8) const;

 private:
  GgufType type_ = GgufType::UInt8;
  GgufType element_type_ = GgufType::UInt8;
  uint64_t count_ = 0;
  const std::byte* raw_ = nullptr;  // fixed-size scalar or numeric array elements
  std::string_view text_;
  std::vector<std::string_view> strings_;
  std::vector<GgufValue> nested_;
};

}  // namespace sluice::loader
