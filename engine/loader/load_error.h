#pragma once
// The exception type of the weight loaders.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sluice::loader {

// A model file that cannot be served. Loading happens at startup (or on an admin
// request), never on the hot path, so a bad file is reported by throwing; the message
// always names the file, and the byte offset where one is known, so an operator can
// find the problem with a hex dump. Owns only its message; any thread may throw it.
class LoadError : public std::runtime_error {
 public:
  // "<path>: <reason>"
  LoadError(const std::filesystem::path& path, std::string_view reason)
      : std::runtime_error(path.string() + ": " + std::string(reason)) {}

  // "<path>: offset <offset>: <reason>"
  LoadError(const std::filesystem::path& path, uint64_t offset, std::string_view reason)
      : std::runtime_error(path.string() + ": offset " + std::to_string(offset) + ": " +
                           std::string(reason)) {}
};

}  // namespace sluice::loader
