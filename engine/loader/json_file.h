#pragma once
// Reading the small JSON files of a Hugging Face model folder (config.json, the
// shard index), with the size and nesting guards untrusted input needs. Internal to
// engine/loader: nothing outside the loaders sees JSON.
#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

namespace sluice::loader::detail {

// Throws LoadError naming `path` when it cannot be read, is larger than max_bytes,
// nests deeper than 16 levels, or is not valid JSON.
nlohmann::json parse_json_file(const std::filesystem::path& path, uint64_t max_bytes);

}  // namespace sluice::loader::detail
