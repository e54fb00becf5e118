#pragma once
// Typed, error-naming reads of one object of a Hugging Face config file
// (config.json, generation_config.json, speech_tokenizer/config.json). Internal to
// engine/loader and the model loaders that read such files.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "engine/loader/load_error.h"

namespace sluice::loader::detail {

// Typed reads of one config object; null counts as absent, as in transformers.
class ConfigReader {
 public:
  ConfigReader(const std::filesystem::path& path, const nlohmann::json& object, std::string prefix)
      : path_(path), object_(object), prefix_(std::move(prefix)) {}

  std::string key(std::string_view name) const { return prefix_ + std::string(name); }
  const nlohmann::json* find(std::string_view name) const {
    auto it = object_.find(std::string(name));
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  std::optional<int64_t> integer(std::string_view name) const {
    const nlohmann::json* value = find(name);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number_integer()) fail(name, "is not an integer");
    if (value->is_number_unsigned() && value->get<uint64_t>() > uint64_t{INT64_MAX}) return -1;
    return value->get<int64_t>();
  }
  int64_t required_integer(std::string_view name) const {
    if (auto value = integer(name)) return *value;
    fail(name, "is missing");
  }
  std::optional<float> real(std::string_view name) const {
    const nlohmann::json* value = find(name);
    if (value == nullptr) return std::nullopt;
    if (!value->is_number()) fail(name, "is not a number");
    return value->get<float>();
  }
  std::optional<bool> boolean(std::string_view name) const {
    const nlohmann::json* value = find(name);
    if (value == nullptr) return std::nullopt;
    if (!value->is_boolean()) fail(name, "is not a boolean");
    return value->get<bool>();
  }
  std::optional<std::string> string(std::string_view name) const {
    const nlohmann::json* value = find(name);
    if (value == nullptr) return std::nullopt;
    if (!value->is_string()) fail(name, "is not a string");
    return value->get<std::string>();
  }
  const nlohmann::json* object(std::string_view name) const {
    const nlohmann::json* value = find(name);
    if (value != nullptr && !value->is_object()) fail(name, "is not an object");
    return value;
  }
  [[noreturn]] void fail(std::string_view name, const std::string& reason) const {
    throw LoadError(path_, "key '" + key(name) + "' " + reason);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  const std::filesystem::path& path_;
  const nlohmann::json& object_;
  std::string prefix_;
};

}  // namespace sluice::loader::detail
