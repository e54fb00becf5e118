#pragma once
// The one exception type of the weight loaders. Loading happens at startup (or on an
// admin request), never on the hot path, so a bad model file is reported by throwing;
// the message always names the file, and the byte offset where one is known, so an
// operator can find the problem with a hex dump.
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace sluice::loader {

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
