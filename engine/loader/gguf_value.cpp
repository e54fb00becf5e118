#include "engine/loader/gguf_value.h"

#include <charconv>
#include <cstring>
#include <limits>
#include <utility>

namespace sluice::loader {
namespace {

// GGUF is little-endian and the bytes may sit at any alignment in the mapping.
template <class T>
T load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

std::optional<int64_t> int_at(GgufType type, const std::byte* p) {
  switch (type) {
    case GgufType::UInt8: return load<uint8_t>(p);
    case GgufType::Int8: return load<int8_t>(p);
    case GgufType::UInt16: return load<uint16_t>(p);
    case GgufType::Int16: return load<int16_t>(p);
    case GgufType::UInt32: return load<uint32_t>(p);
    case GgufType::Int32: return load<int32_t>(p);
    case GgufType::Int64: return load<int64_t>(p);
    case GgufType::UInt64: {
      const auto value = load<uint64_t>(p);
      if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return std::nullopt;
      }
      return static_cast<int64_t>(value);
    }
    default: return std::nullopt;
  }
}

std::optional<uint64_t> uint_at(GgufType type, const std::byte* p) {
  if (type == GgufType::UInt64) return load<uint64_t>(p);
  const std::optional<int64_t> value = int_at(type, p);
  if (!value || *value < 0) return std::nullopt;
  return static_cast<uint64_t>(*value);
}

std::optional<double> float_at(GgufType type, const std::byte* p) {
  if (type == GgufType::Float32) return load<float>(p);
  if (type == GgufType::Float64) return load<double>(p);
  return std::nullopt;
}

template <class T>
void append_number(std::string& out, T value) {
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, result.ptr);
}

void append_fixed(std::string& out, GgufType type, const std::byte* p) {
  if (type == GgufType::Bool) {
    out += load<uint8_t>(p) != 0 ? "true" : "false";
  } else if (type == GgufType::Float32) {
    append_number(out, load<float>(p));  // shortest form that round-trips a float
  } else if (type == GgufType::Float64) {
    append_number(out, load<double>(p));
  } else if (type == GgufType::UInt64) {
    append_number(out, load<uint64_t>(p));
  } else if (const std::optional<int64_t> value = int_at(type, p)) {
    append_number(out, *value);
  }
}

void append_quoted(std::string& out, std::string_view text) {
  constexpr size_t kMaxBytes = 80;
  bool is_cut = false;
  if (text.size() > kMaxBytes) {
    size_t end = kMaxBytes;
    // Back up to a UTF-8 character boundary so the preview stays valid text.
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    text = text.substr(0, end);
    is_cut = true;
  }
  out += '"';
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (byte < 0x20 || byte == 0x7F) {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    } else {
      out += c;
    }
  }
  out += '"';
  if (is_cut) out += "...";
}

}  // namespace

std::optional<GgufType> to_gguf_type(uint32_t id) {
  if (id > static_cast<uint32_t>(GgufType::Float64)) return std::nullopt;
  return static_cast<GgufType>(id);
}

std::string_view gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::UInt8: return "uint8";
    case GgufType::Int8: return "int8";
    case GgufType::UInt16: return "uint16";
    case GgufType::Int16: return "int16";
    case GgufType::UInt32: return "uint32";
    case GgufType::Int32: return "int32";
    case GgufType::Float32: return "float32";
    case GgufType::Bool: return "bool";
    case GgufType::String: return "string";
    case GgufType::Array: return "array";
    case GgufType::UInt64: return "uint64";
    case GgufType::Int64: return "int64";
    case GgufType::Float64: return "float64";
  }
  return "?";
}

uint32_t gguf_fixed_size(GgufType type) {
  switch (type) {
    case GgufType::UInt8:
    case GgufType::Int8:
    case GgufType::Bool: return 1;
    case GgufType::UInt16:
    case GgufType::Int16: return 2;
    case GgufType::UInt32:
    case GgufType::Int32:
    case GgufType::Float32: return 4;
    case GgufType::UInt64:
    case GgufType::Int64:
    case GgufType::Float64: return 8;
    case GgufType::String:
    case GgufType::Array: return 0;
  }
  return 0;
}

bool is_integer(GgufType type) {
  return gguf_fixed_size(type) != 0 && type != GgufType::Bool && !is_float(type);
}

bool is_float(GgufType type) { return type == GgufType::Float32 || type == GgufType::Float64; }

GgufValue GgufValue::make_fixed(GgufType type, const std::byte* raw) {
  GgufValue value;
  value.type_ = type;
  value.raw_ = raw;
  return value;
}

GgufValue GgufValue::make_string(std::string_view text) {
  GgufValue value;
  value.type_ = GgufType::String;
  value.text_ = text;
  return value;
}

GgufValue GgufValue::make_numeric_array(GgufType element_type, uint64_t count,
                                        const std::byte* raw) {
  GgufValue value;
  value.type_ = GgufType::Array;
  value.element_type_ = element_type;
  value.count_ = count;
  value.raw_ = raw;
  return value;
}

GgufValue GgufValue::make_string_array(std::vector<std::string_view> strings) {
  GgufValue value;
  value.type_ = GgufType::Array;
  value.element_type_ = GgufType::String;
  value.count_ = strings.size();
  value.strings_ = std::move(strings);
  return value;
}

GgufValue GgufValue::make_nested_array(std::vector<GgufValue> arrays) {
  GgufValue value;
  value.type_ = GgufType::Array;
  value.element_type_ = GgufType::Array;
  value.count_ = arrays.size();
  value.nested_ = std::move(arrays);
  return value;
}

std::string GgufValue::type_name() const {
  if (!is_array()) return std::string(gguf_type_name(type_));
  return "array[" + std::string(gguf_type_name(element_type_)) + "]";
}

std::optional<uint64_t> GgufValue::to_uint() const {
  if (!is_integer(type_)) return std::nullopt;
  return uint_at(type_, raw_);
}

std::optional<int64_t> GgufValue::to_int() const {
  if (!is_integer(type_)) return std::nullopt;
  return int_at(type_, raw_);
}

std::optional<double> GgufValue::to_float() const { return float_at(type_, raw_); }

std::optional<bool> GgufValue::to_bool() const {
  if (type_ != GgufType::Bool) return std::nullopt;
  return load<uint8_t>(raw_) != 0;
}

std::optional<std::string_view> GgufValue::to_string() const {
  if (type_ != GgufType::String) return std::nullopt;
  return text_;
}

std::optional<std::vector<int64_t>> GgufValue::to_int_vector() const {
  if (!is_array() || !is_integer(element_type_)) return std::nullopt;
  const uint32_t stride = gguf_fixed_size(element_type_);
  std::vector<int64_t> out;
  out.reserve(count_);
  for (uint64_t i = 0; i < count_; ++i) {
    const std::optional<int64_t> element = int_at(element_type_, raw_ + i * stride);
    if (!element) return std::nullopt;
    out.push_back(*element);
  }
  return out;
}

std::optional<std::vector<float>> GgufValue::to_float_vector() const {
  if (!is_array() || !is_float(element_type_)) return std::nullopt;
  const uint32_t stride = gguf_fixed_size(element_type_);
  std::vector<float> out;
  out.reserve(count_);
  for (uint64_t i = 0; i < count_; ++i) {
    out.push_back(static_cast<float>(*float_at(element_type_, raw_ + i * stride)));
  }
  return out;
}

std::span<const std::byte> GgufValue::raw_bytes() const {
  if (!is_array() || gguf_fixed_size(element_type_) == 0) return {};
  return {raw_, count_ * gguf_fixed_size(element_type_)};
}

std::string GgufValue::to_display_string(size_t max_items) const {
  std::string out;
  if (type_ == GgufType::String) {
    append_quoted(out, text_);
    return out;
  }
  if (!is_array()) {
    append_fixed(out, type_, raw_);
    return out;
  }
  out += '[';
  const uint64_t num_shown = count_ < max_items ? count_ : max_items;
  const uint32_t stride = gguf_fixed_size(element_type_);
  for (uint64_t i = 0; i < num_shown; ++i) {
    if (i > 0) out += ", ";
    if (element_type_ == GgufType::String) {
      append_quoted(out, strings_[i]);
    } else if (element_type_ == GgufType::Array) {
      out += nested_[i].to_display_string(max_items);
    } else {
      append_fixed(out, element_type_, raw_ + i * stride);
    }
  }
  if (num_shown < count_) {
    out += ", ... (" + std::to_string(count_) + " items)";
  }
  out += ']';
  return out;
}

}  // namespace sluice::loader
